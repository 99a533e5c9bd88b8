import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Loads many topics and partitions evenly, for the benchmark's wide cases: every partition of
 * every topic gets its share of the records (the first ones one more when they do not divide),
 * sent partition after partition so that each partition's records form full batches, as a
 * producer with a sticky partitioner would make them. Values are random upper-case letters, as
 * in Kafka's ProducerPerformance; records have no key.
 *
 * <p>Arguments: bootstrap servers, comma-separated topics, partitions per topic, records in
 * total, record size in bytes, then producer properties as key=value.
 */
public class Load {
    public static void main(String[] args) throws Exception {
        String[] topics = args[1].split(",");
        int partitions = Integer.parseInt(args[2]);
        long records = Long.parseLong(args[3]);
        int size = Integer.parseInt(args[4]);
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        for (int i = 5; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        long slots = (long) topics.length * partitions;
        Random random = new Random();
        AtomicLong acknowledged = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            long slot = 0;
            for (String topic : topics) {
                for (int partition = 0; partition < partitions; partition++, slot++) {
                    long count = records / slots + (slot < records % slots ? 1 : 0);
                    for (long i = 0; i < count; i++) {
                        byte[] value = new byte[size];
                        for (int j = 0; j < size; j++) {
                            value[j] = (byte) (random.nextInt(26) + 65);
                        }
                        producer.send(new ProducerRecord<>(topic, partition, null, value), (metadata, error) -> {
                            if (error != null) {
                                failure.compareAndSet(null, error);
                            } else {
                                acknowledged.incrementAndGet();
                            }
                        });
                    }
                }
            }
            producer.flush();
        }
        if (failure.get() != null) {
            System.err.println("sending failed: " + failure.get());
            System.exit(1);
        }
        System.out.println("acknowledged=" + acknowledged.get());
        if (acknowledged.get() != records) {
            System.exit(1);
        }
    }
}
