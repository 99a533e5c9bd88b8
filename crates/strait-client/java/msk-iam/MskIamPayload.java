import java.nio.charset.StandardCharsets;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.msk.auth.iam.internals.AWS4SignedPayloadGenerator;
import software.amazon.msk.auth.iam.internals.AuthenticationRequestParams;

/**
 * Prints the AWS_MSK_IAM payload that aws-msk-iam-auth signs now for a host and fixed
 * credentials: `MskIamPayload <host> <access key id> <secret> [<session token>]`.
 *
 * The library signs at the current time for 15 minutes; its signer counts X-Amz-Expires from the
 * second the signature is made, so a signature made just across a second boundary says 899.
 * Such a payload is signed again, so that the one printed is the library's normal one.
 */
public class MskIamPayload {
    public static void main(String[] args) throws Exception {
        AwsCredentials credentials = args.length > 3
            ? AwsSessionCredentials.create(args[1], args[2], args[3])
            : AwsBasicCredentials.create(args[1], args[2]);
        AWS4SignedPayloadGenerator generator = new AWS4SignedPayloadGenerator();
        for (int attempt = 0; attempt < 5; attempt++) {
            AuthenticationRequestParams params = AuthenticationRequestParams.create(args[0], credentials, "reference");
            String payload = new String(generator.signedPayload(params), StandardCharsets.UTF_8);
            if (payload.contains("\"x-amz-expires\":\"900\"")) {
                System.out.println(payload);
                return;
            }
        }
        throw new IllegalStateException("aws-msk-iam-auth never signed for 900 seconds");
    }
}
