import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

/**
 * Asks MirrorMaker 2's own client library about a cluster, as an MM2 user fails over.
 * Usage: Mm2Client bootstrap remoteClusterAlias group
 */
public class Mm2Client {
    public static void main(String[] args) throws Exception {
        Map<String, Object> props = Map.of("bootstrap.servers", args[0]);
        System.out.println("hops=" + RemoteClusterUtils.replicationHops(props, args[1]));
        System.out.println("upstream=" + new TreeSet<>(RemoteClusterUtils.upstreamClusters(props)));
        System.out.println("checkpointTopics=" + new TreeSet<>(RemoteClusterUtils.checkpointTopics(props)));
        System.out.println("heartbeatTopics=" + new TreeSet<>(RemoteClusterUtils.heartbeatTopics(props)));
        Map<TopicPartition, OffsetAndMetadata> offsets =
            RemoteClusterUtils.translateOffsets(props, args[1], args[2], Duration.ofSeconds(30));
        TreeMap<String, Long> sorted = new TreeMap<>();
        offsets.forEach((tp, om) -> sorted.put(tp.topic() + " " + tp.partition(), om.offset()));
        sorted.forEach((tp, offset) -> System.out.println("offset " + tp + " " + offset));
    }
}
