package io.checkpointsurgeon.demo;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * Reads the output topic from the beginning in a background thread and counts how often each
 * input number arrived (the job writes {@code "<number>,<key>,<count>"}).
 */
final class OutputTracker implements AutoCloseable {
    record Summary(long records, long missing, long duplicates) {}

    private final Map<Long, Integer> seen = new HashMap<>();
    private long records;
    private volatile boolean running = true;
    private volatile Throwable failure;
    private final Thread thread;

    OutputTracker(String bootstrap, String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        thread = new Thread(() -> {
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
                List<TopicPartition> parts = new ArrayList<>();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (parts.isEmpty()) {
                    // Right after the topic was created its metadata may not be there yet (null).
                    List<PartitionInfo> infos = c.partitionsFor(topic, Duration.ofSeconds(10));
                    if (infos != null) {
                        for (PartitionInfo pi : infos) parts.add(new TopicPartition(topic, pi.partition()));
                    }
                    if (parts.isEmpty()) {
                        if (System.nanoTime() > deadline) throw new IllegalStateException("no metadata for topic " + topic);
                        Thread.sleep(200);
                    }
                }
                c.assign(parts);
                c.seekToBeginning(parts);
                while (running) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        long n = Long.parseLong(r.value().substring(0, r.value().indexOf(',')));
                        synchronized (seen) {
                            seen.merge(n, 1, Integer::sum);
                            records++;
                            seen.notifyAll();
                        }
                    }
                }
            } catch (Throwable t) {
                failure = t;
            }
        }, "output-tracker");
        thread.setDaemon(true);
        thread.start();
    }

    /** Waits until every number below {@code produced} has arrived at least once. */
    void awaitAll(long produced, long timeoutSeconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        synchronized (seen) {
            while (distinctBelow(produced) < produced) {
                if (failure != null) throw new IllegalStateException("output consumer failed", failure);
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new IllegalStateException("timed out: " + distinctBelow(produced) + " of " + produced
                            + " records in the output topic");
                }
                seen.wait(Math.max(1, Math.min(200, TimeUnit.NANOSECONDS.toMillis(left))));
            }
        }
    }

    private long distinctBelow(long produced) {
        long n = 0;
        for (Long k : seen.keySet()) {
            if (k >= 0 && k < produced) n++;
        }
        return n;
    }

    Summary summary(long produced) {
        synchronized (seen) {
            long missing = produced - distinctBelow(produced);
            return new Summary(records, missing, records - seen.size());
        }
    }

    @Override
    public void close() {
        running = false;
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
