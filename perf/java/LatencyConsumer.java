import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Measures end-to-end latency on the target cluster with Kafka's own consumer: for every record
 * of a topic, the time it arrives here minus its timestamp (set by the source producer when it
 * was sent; the mirrors keep it). Reads every partition from its end at start (records already
 * there are not counted), without a group, with the consumer's default fetch settings.
 *
 * <p>Arguments: bootstrap servers, topic, records expected, warm-up in ms (records with a
 * timestamp within this long of the earliest one are not measured), timeout in seconds, and
 * the consumer's {@code isolation.level} ({@code read_committed} for a target written in
 * transactions).
 * Prints "ready" once the partitions are assigned and positioned, then at the end one line:
 * {@code received=N measured=M p50=… p99=… max=…} (milliseconds).
 */
public class LatencyConsumer {
    public static void main(String[] args) throws Exception {
        String topic = args[1];
        long expected = Long.parseLong(args[2]);
        long warmupMs = Long.parseLong(args[3]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[4]) * 1000;
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("isolation.level", args[5]);
        List<long[]> seen = new ArrayList<>(); // {timestamp, latency}
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic, Duration.ofSeconds(60))) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToEnd(partitions);
            for (TopicPartition partition : partitions) {
                consumer.position(partition, Duration.ofSeconds(60));
            }
            System.out.println("ready");
            System.out.flush();
            while (seen.size() < expected && System.currentTimeMillis() < deadline) {
                var records = consumer.poll(Duration.ofMillis(100));
                long now = System.currentTimeMillis();
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    seen.add(new long[] {record.timestamp(), now - record.timestamp()});
                }
            }
        }
        long earliest = seen.stream().mapToLong(s -> s[0]).min().orElse(0);
        long[] latencies = seen.stream()
                .filter(s -> s[0] >= earliest + warmupMs)
                .mapToLong(s -> s[1])
                .sorted()
                .toArray();
        System.out.println("received=" + seen.size() + " measured=" + latencies.length
                + " p50=" + at(latencies, 0.50) + " p99=" + at(latencies, 0.99)
                + " max=" + at(latencies, 1.0));
    }

    private static long at(long[] sorted, double quantile) {
        if (sorted.length == 0) {
            return -1;
        }
        return sorted[(int) ((sorted.length - 1) * quantile)];
    }
}
