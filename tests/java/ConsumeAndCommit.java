import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A real consumer group member: subscribes to a topic, consumes up to `limit` records of each of
 * its `partitions` partitions (-1: everything until the topic is quiet for 5 s once partitions
 * are assigned), prints each
 * value, commits the position after the last consumed record (with metadata "m<partition>")
 * and leaves. Usage: ConsumeAndCommit bootstrap topic group partitions limit
 */
public class ConsumeAndCommit {
    public static void main(String[] args) {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[2]);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        int partitions = Integer.parseInt(args[3]);
        long limit = Long.parseLong(args[4]);
        Map<Integer, Long> consumed = new HashMap<>();
        Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
        long deadline = System.currentTimeMillis() + 60_000;
        // Quiet counts from the assignment on: joining the group may take longer than 5 s.
        long quietSince = Long.MAX_VALUE;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(args[1]));
            while (System.currentTimeMillis() < deadline) {
                boolean done = limit >= 0 && consumed.size() == partitions
                    && consumed.values().stream().allMatch(c -> c >= limit);
                if (done || (limit < 0 && System.currentTimeMillis() - quietSince > 5_000)) {
                    break;
                }
                var records = consumer.poll(Duration.ofMillis(200));
                if (quietSince == Long.MAX_VALUE && !consumer.assignment().isEmpty()) {
                    quietSince = System.currentTimeMillis();
                }
                for (ConsumerRecord<String, String> record : records) {
                    quietSince = System.currentTimeMillis();
                    long count = consumed.getOrDefault(record.partition(), 0L);
                    if (limit >= 0 && count >= limit) {
                        continue;
                    }
                    consumed.put(record.partition(), count + 1);
                    System.out.println(record.value());
                    commit.put(new TopicPartition(record.topic(), record.partition()),
                        new OffsetAndMetadata(record.offset() + 1, "m" + record.partition()));
                }
            }
            consumer.commitSync(commit);
        }
    }
}
