// What Kafka Connect writes to and reads from its config and status topics, for
// tests/unit/storage/test_config_store.py, test_status_store.py and
// tests/integration/test_config_status_stores.py.
//
// The schemas below are KafkaConfigBackingStore's and KafkaStatusBackingStore's (Kafka 4.1.1), and
// values are serialized as those classes do: a Struct through the worker's internal JsonConverter
// (schemas.enable=false). connect-runtime is not on the class path, so the schemas are restated here.
//
// Run as a single-file program: java -cp "<connect libs>/*" ConfigStatusOracle.java < commands
// Commands, one per line, tab-separated, bytes as hex:
//   goldens                -> "<name>\t<hex of serialized bytes>" per golden case, then "end"
//   read <value>           -> the value as JsonConverter (schemas.enable=false) reads it, typed:
//                             {k=v, ...} sorted by key, S:text, L:long, D:double, B:bool, null, [a, b]
//   partition <key> <n>    -> toPositive(murmur2(key)) % n (the Java producer's partition for key)
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

public class ConfigStatusOracle {
    static final Schema CONNECTOR_CONFIGURATION_V0 = SchemaBuilder.struct()
            .field("properties", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA).build())
            .build();
    static final Schema CONNECTOR_TASKS_COMMIT_V0 = SchemaBuilder.struct()
            .field("tasks", Schema.INT32_SCHEMA).build();
    static final Schema TARGET_STATE_V0 = SchemaBuilder.struct()
            .field("state", Schema.STRING_SCHEMA).build();
    static final Schema TARGET_STATE_V1 = SchemaBuilder.struct()
            .field("state", Schema.STRING_SCHEMA)
            .field("state.v2", Schema.OPTIONAL_STRING_SCHEMA).build();
    // Kafka 3.x (before KIP-891) wrote the first four fields only.
    static final Schema STATUS_SCHEMA_3X = SchemaBuilder.struct()
            .field("state", Schema.STRING_SCHEMA)
            .field("trace", SchemaBuilder.string().optional().build())
            .field("worker_id", Schema.STRING_SCHEMA)
            .field("generation", Schema.INT32_SCHEMA).build();
    static final Schema STATUS_SCHEMA_V0 = SchemaBuilder.struct()
            .field("state", Schema.STRING_SCHEMA)
            .field("trace", SchemaBuilder.string().optional().build())
            .field("worker_id", Schema.STRING_SCHEMA)
            .field("generation", Schema.INT32_SCHEMA)
            .field("version", Schema.OPTIONAL_STRING_SCHEMA).build();

    static final Schema TOPIC_STATUS_VALUE_SCHEMA_V0 = SchemaBuilder.struct()
            .field("name", Schema.STRING_SCHEMA)
            .field("connector", Schema.STRING_SCHEMA)
            .field("task", Schema.INT32_SCHEMA)
            .field("discoverTimestamp", Schema.INT64_SCHEMA).build();
    static final Schema TOPIC_STATUS_SCHEMA_V0 = SchemaBuilder.map(Schema.STRING_SCHEMA, TOPIC_STATUS_VALUE_SCHEMA_V0)
            .build();

    static JsonConverter converter = new JsonConverter();

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    static byte[] unhex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    static void golden(String name, Schema schema, Struct value) {
        System.out.println(name + "\t" + hex(converter.fromConnectData("connect-configs", schema, value)));
    }

    static Struct properties(Map<String, String> props) {
        return new Struct(CONNECTOR_CONFIGURATION_V0).put("properties", props);
    }

    // As KafkaConfigBackingStore.serializeTargetState
    static Struct targetState(String state) {
        return new Struct(TARGET_STATE_V1).put("state", state.equals("STOPPED") ? "PAUSED" : state).put("state.v2", state);
    }

    // As KafkaStatusBackingStore.serialize
    static Struct status(Schema schema, String state, String trace, String workerId, int generation, String version) {
        Struct struct = new Struct(schema).put("state", state);
        if (trace != null) struct.put("trace", trace);
        struct.put("worker_id", workerId).put("generation", generation);
        if (schema == STATUS_SCHEMA_V0) struct.put("version", version);
        return struct;
    }

    static void goldens() {
        Map<String, String> connector = new LinkedHashMap<>();
        connector.put("connector.class", "org.apache.kafka.connect.file.FileStreamSourceConnector");
        connector.put("tasks.max", "1");
        connector.put("file", "/tmp/in.txt");
        connector.put("topic", "lines");
        connector.put("name", "local-file-source");
        golden("connector_config", CONNECTOR_CONFIGURATION_V0, properties(connector));
        Map<String, String> text = new LinkedHashMap<>();
        text.put("name", "caf\u00e9 \u65e5\u672c \ud83d\ude00 \"q\" \\ / \t\n\u0001");
        text.put("unset", null);
        golden("connector_config_text", CONNECTOR_CONFIGURATION_V0, properties(text));
        Map<String, String> task = new LinkedHashMap<>();
        task.put("task.class", "org.apache.kafka.connect.file.FileStreamSourceTask");
        task.put("file", "/tmp/in.txt");
        task.put("topic", "lines");
        task.put("batch.size", "2000");
        golden("task_config", CONNECTOR_CONFIGURATION_V0, properties(task));
        golden("commit_3", CONNECTOR_TASKS_COMMIT_V0, new Struct(CONNECTOR_TASKS_COMMIT_V0).put("tasks", 3));
        golden("commit_0", CONNECTOR_TASKS_COMMIT_V0, new Struct(CONNECTOR_TASKS_COMMIT_V0).put("tasks", 0));
        for (String state : List.of("STARTED", "PAUSED", "STOPPED"))
            golden("target_" + state.toLowerCase(Locale.ROOT), TARGET_STATE_V1, targetState(state));
        golden("target_paused_v0", TARGET_STATE_V0, new Struct(TARGET_STATE_V0).put("state", "PAUSED"));
        golden("status_running", STATUS_SCHEMA_V0,
                status(STATUS_SCHEMA_V0, "RUNNING", null, "127.0.0.1:8083", 0, null));
        golden("status_failed", STATUS_SCHEMA_V0, status(STATUS_SCHEMA_V0, "FAILED",
                "org.apache.kafka.connect.errors.ConnectException: boom\n\tat X.y(X.java:1)\n",
                "10.0.0.7:8083", 7, "4.1.1"));
        golden("status_unassigned_3x", STATUS_SCHEMA_3X,
                status(STATUS_SCHEMA_3X, "UNASSIGNED", null, "10.0.0.7:8083", 3, null));
        // As KafkaStatusBackingStore.serializeTopicStatus
        Struct topic = new Struct(TOPIC_STATUS_VALUE_SCHEMA_V0).put("name", "orders").put("connector", "jdbc-source")
                .put("task", 2).put("discoverTimestamp", 1795000000123L);
        System.out.println("topic_status\t" + hex(converter.fromConnectData("connect-status", TOPIC_STATUS_SCHEMA_V0,
                Collections.singletonMap("topic", topic))));
        System.out.println("end");
    }

    static String typed(Object value) {
        if (value == null) return "null";
        if (value instanceof String) return "S:" + value;
        if (value instanceof Long) return "L:" + value;
        if (value instanceof Double) return "D:" + value;
        if (value instanceof Boolean) return "B:" + value;
        if (value instanceof List) {
            List<String> items = new ArrayList<>();
            for (Object item : (List<?>) value) items.add(typed(item));
            return items.toString();
        }
        if (value instanceof Map) {
            TreeMap<String, String> entries = new TreeMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) entries.put(String.valueOf(e.getKey()), typed(e.getValue()));
            return entries.toString();
        }
        return value.getClass().getSimpleName() + ":" + value;
    }

    public static void main(String[] args) throws Exception {
        converter.configure(Map.of("schemas.enable", "false"), false);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t", -1);
            switch (parts[0]) {
                case "goldens":
                    goldens();
                    break;
                case "read":
                    System.out.println(typed(converter.toConnectData("connect-status", unhex(parts[1])).value()));
                    break;
                case "partition":
                    System.out.println(Utils.toPositive(Utils.murmur2(unhex(parts[1]))) % Integer.parseInt(parts[2]));
                    break;
                default:
                    throw new IllegalArgumentException("unknown command " + parts[0]);
            }
        }
    }
}
