import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Writes transactions to a topic with Kafka's own transactional producer: transaction i holds
 * `perTxn` records with values "commit-i-j" or "abort-i-j"; every third transaction is aborted.
 * Usage: TxnProducer bootstrap topic transactions perTxn
 */
public class TxnProducer {
    public static void main(String[] args) {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("transactional.id", "strait-test-" + args[1]);
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        int transactions = Integer.parseInt(args[2]);
        int perTxn = Integer.parseInt(args[3]);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            for (int i = 0; i < transactions; i++) {
                boolean abort = i % 3 == 1;
                producer.beginTransaction();
                for (int j = 0; j < perTxn; j++) {
                    String value = (abort ? "abort-" : "commit-") + i + "-" + j;
                    producer.send(new ProducerRecord<>(args[1], j % 2, "k" + j, value));
                }
                producer.flush();
                if (abort) {
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
            }
        }
    }
}
