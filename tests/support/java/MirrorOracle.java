/*
 * Kafka's MirrorMaker 2 client classes as an oracle for Kopycat's MM2 records (tests/support/mirror_oracle.py).
 *
 * Reads one JSON request on stdin and prints one JSON answer on stdout. Every answer comes from Kafka's own
 * code (connect-mirror-client and connect-mirror 4.1.1): records are parsed with OffsetSync/Checkpoint/
 * Heartbeat.deserializeRecord, offsets translated with RemoteClusterUtils.translateOffsets and with
 * MirrorCheckpointTask's OffsetSyncStore, the topology read with MirrorClient. The class lives in Kafka's
 * package because OffsetSyncStore's constructor and handleRecord are package-private (Kafka's own tests
 * subclass it the same way), so it is compiled with javac onto the class path, not run as a source file.
 */
package org.apache.kafka.connect.mirror;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class MirrorOracle {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    /** Kafka's OffsetSyncStore fed from records already read, as Kafka's tests feed it. */
    static final class ReplayedOffsetSyncStore extends OffsetSyncStore {
        private final List<ConsumerRecord<byte[], byte[]>> records;

        ReplayedOffsetSyncStore(List<ConsumerRecord<byte[], byte[]>> records) {
            this.records = records;
        }

        @Override
        void backingStoreStart() {
            records.forEach(this::handleRecord);
        }
    }

    public static void main(String[] args) throws Exception {
        JsonNode request = JSON.readTree(System.in);
        JsonNode clusters = request.path("clusters");
        ObjectNode answer = JSON.createObjectNode();
        ArrayNode reads = answer.putArray("reads");
        for (JsonNode read : request.path("reads")) {
            reads.add(parse(read.path("kind").asText(), readAll(clusters.path(read.path("cluster").asText()).asText(),
                    read.path("topic").asText())));
        }
        ArrayNode translations = answer.putArray("translations");
        for (JsonNode ask : request.path("translations")) {
            Map<TopicPartition, OffsetAndMetadata> offsets = RemoteClusterUtils.translateOffsets(
                    clientProps(clusters.path(ask.path("cluster").asText()).asText()),
                    ask.path("remote_alias").asText(), ask.path("group").asText(), TIMEOUT);
            ArrayNode out = translations.addArray();
            offsets.forEach((tp, om) -> out.addObject().put("topic", tp.topic()).put("partition", tp.partition())
                    .put("offset", om.offset()).put("metadata", om.metadata()));
        }
        ArrayNode storeTranslations = answer.putArray("sync_store_translations");
        for (JsonNode ask : request.path("sync_store_translations")) {
            storeTranslations.add(translateWithSyncStore(clusters.path(ask.path("cluster").asText()).asText(), ask));
        }
        ArrayNode topologies = answer.putArray("topologies");
        for (JsonNode ask : request.path("topologies")) {
            topologies.add(topology(clusters.path(ask.path("cluster").asText()).asText(), ask.path("aliases")));
        }
        System.out.println(JSON.writeValueAsString(answer));
    }

    static Map<String, Object> clientProps(String bootstrap) {
        return Map.of("bootstrap.servers", bootstrap);
    }

    /** Every record of partition 0 of the topic, from its start to its end offset now. */
    static List<ConsumerRecord<byte[], byte[]>> readAll(String bootstrap, String topic) {
        Map<String, Object> props = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long end = consumer.endOffsets(List.of(tp), TIMEOUT).get(tp);
            long deadline = System.currentTimeMillis() + TIMEOUT.toMillis();
            while (consumer.position(tp, TIMEOUT) < end) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("timed out reading " + topic + " to offset " + end);
                }
                consumer.poll(Duration.ofMillis(500)).forEach(out::add);
            }
        }
        return out;
    }

    static ArrayNode parse(String kind, List<ConsumerRecord<byte[], byte[]>> records) {
        ArrayNode out = JSON.createArrayNode();
        for (ConsumerRecord<byte[], byte[]> record : records) {
            if (record.key() == null || record.value() == null) {
                continue;
            }
            ObjectNode node = out.addObject().put("offset_in_topic", record.offset());
            switch (kind) {
                case "offset_sync" -> {
                    OffsetSync sync = OffsetSync.deserializeRecord(record);
                    node.put("topic", sync.topicPartition().topic()).put("partition", sync.topicPartition().partition())
                            .put("upstream_offset", sync.upstreamOffset()).put("downstream_offset", sync.downstreamOffset());
                }
                case "checkpoint" -> {
                    Checkpoint checkpoint = Checkpoint.deserializeRecord(record);
                    node.put("group", checkpoint.consumerGroupId()).put("topic", checkpoint.topicPartition().topic())
                            .put("partition", checkpoint.topicPartition().partition())
                            .put("upstream_offset", checkpoint.upstreamOffset())
                            .put("downstream_offset", checkpoint.downstreamOffset()).put("metadata", checkpoint.metadata());
                }
                case "heartbeat" -> {
                    Heartbeat heartbeat = Heartbeat.deserializeRecord(record);
                    node.put("source_alias", heartbeat.sourceClusterAlias())
                            .put("target_alias", heartbeat.targetClusterAlias()).put("timestamp", heartbeat.timestamp());
                }
                default -> throw new IllegalArgumentException("unknown record kind " + kind);
            }
        }
        return out;
    }

    /** MirrorCheckpointTask's translation: every offset sync of the topic read, then translateDownstream. */
    static ArrayNode translateWithSyncStore(String bootstrap, JsonNode ask) {
        ArrayNode out = JSON.createArrayNode();
        try (OffsetSyncStore store = new ReplayedOffsetSyncStore(readAll(bootstrap, ask.path("topic").asText()))) {
            store.start(ask.path("initialization_must_read_to_end").asBoolean(false));
            for (JsonNode offset : ask.path("offsets")) {
                TopicPartition tp = new TopicPartition(offset.path("topic").asText(), offset.path("partition").asInt());
                OptionalLong translated = store.translateDownstream(ask.path("group").asText(), tp,
                        offset.path("offset").asLong());
                ObjectNode node = out.addObject().put("topic", tp.topic()).put("partition", tp.partition());
                if (translated.isPresent()) {
                    node.put("downstream_offset", translated.getAsLong());
                } else {
                    node.putNull("downstream_offset");
                }
            }
        }
        return out;
    }

    static ObjectNode topology(String bootstrap, JsonNode aliases) throws InterruptedException {
        ObjectNode node = JSON.createObjectNode();
        try (MirrorClient client = new MirrorClient(clientProps(bootstrap))) {
            client.heartbeatTopics().stream().sorted().forEach(node.putArray("heartbeat_topics")::add);
            client.checkpointTopics().stream().sorted().forEach(node.putArray("checkpoint_topics")::add);
            new TreeSet<>(client.upstreamClusters()).forEach(node.putArray("upstream_clusters")::add);
            ObjectNode hops = node.putObject("replication_hops");
            ObjectNode remoteTopics = node.putObject("remote_topics");
            for (JsonNode alias : aliases) {
                hops.put(alias.asText(), client.replicationHops(alias.asText()));
                new TreeSet<>(client.remoteTopics(alias.asText())).forEach(remoteTopics.putArray(alias.asText())::add);
            }
        }
        return node;
    }
}
