// Kafka's own JsonConverter (connect-json, include/jars/connect) over the same Connect values as
// bench/bench_json_converter.py, on one thread, timed in that thread's CPU time.
//
// Compiled and run by bench_json_converter.py (javac into a temp dir, class path the `connect`
// jar set): java JsonConverterBench ROWS_TSV ROUNDS WARM_UP_SECONDS
// ROWS_TSV holds one record a line, its ten fields tab-separated as Python wrote them, so both
// sides convert the very same values. The JIT is warmed for WARM_UP_SECONDS on each path before
// ROUNDS timed passes; it prints "first\t<hex>" (the first record's bytes, for the Python side to
// compare), then "serialize\t<ns>" and "deserialize\t<ns>" per round, then a checksum line that
// keeps the work from being optimised away.

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Date;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.json.JsonConverter;

public class JsonConverterBench {
    static final String TOPIC = "orders";
    static long checksum = 0;

    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Paths.get(args[0]));
        int rounds = Integer.parseInt(args[1]);
        double warmUpSeconds = Double.parseDouble(args[2]);
        Schema schema = SchemaBuilder.struct().name("bench.Order")
                .field("id", Schema.INT64_SCHEMA)
                .field("customer_id", Schema.INT32_SCHEMA)
                .field("name", Schema.STRING_SCHEMA)
                .field("email", Schema.OPTIONAL_STRING_SCHEMA)
                .field("city", Schema.STRING_SCHEMA)
                .field("amount", Schema.FLOAT64_SCHEMA)
                .field("discount", Schema.OPTIONAL_FLOAT64_SCHEMA)
                .field("active", Schema.BOOLEAN_SCHEMA)
                .field("quantity", Schema.INT32_SCHEMA)
                .field("created_at", Timestamp.SCHEMA)
                .build();
        Struct[] structs = new Struct[lines.size()];
        for (int i = 0; i < structs.length; i++) {
            String[] f = lines.get(i).split("\t", -1);
            structs[i] = new Struct(schema)
                    .put("id", Long.parseLong(f[0]))
                    .put("customer_id", Integer.parseInt(f[1]))
                    .put("name", f[2])
                    .put("email", f[3])
                    .put("city", f[4])
                    .put("amount", Double.parseDouble(f[5]))
                    .put("discount", Double.parseDouble(f[6]))
                    .put("active", Boolean.parseBoolean(f[7]))
                    .put("quantity", Integer.parseInt(f[8]))
                    .put("created_at", new Date(Long.parseLong(f[9])));
        }
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of("schemas.enable", "true"), false);
        byte[][] encoded = new byte[structs.length][];
        ThreadMXBean bean = ManagementFactory.getThreadMXBean();

        long warmEnd = System.nanoTime() + (long) (warmUpSeconds * 1e9);
        do {
            serialize(converter, schema, structs, encoded);
        } while (System.nanoTime() < warmEnd);
        System.out.println("first\t" + HexFormat.of().formatHex(encoded[0]));
        for (int round = 0; round < rounds; round++) {
            long start = bean.getCurrentThreadCpuTime();
            serialize(converter, schema, structs, encoded);
            System.out.println("serialize\t" + (bean.getCurrentThreadCpuTime() - start));
        }
        warmEnd = System.nanoTime() + (long) (warmUpSeconds * 1e9);
        do {
            deserialize(converter, encoded);
        } while (System.nanoTime() < warmEnd);
        for (int round = 0; round < rounds; round++) {
            long start = bean.getCurrentThreadCpuTime();
            deserialize(converter, encoded);
            System.out.println("deserialize\t" + (bean.getCurrentThreadCpuTime() - start));
        }
        System.out.println("checksum\t" + checksum);
    }

    static void serialize(JsonConverter converter, Schema schema, Struct[] structs, byte[][] encoded) {
        for (int i = 0; i < structs.length; i++) {
            encoded[i] = converter.fromConnectData(TOPIC, schema, structs[i]);
        }
        checksum += encoded[encoded.length - 1].length;
    }

    static void deserialize(JsonConverter converter, byte[][] encoded) {
        for (byte[] data : encoded) {
            SchemaAndValue read = converter.toConnectData(TOPIC, data);
            checksum += ((Struct) read.value()).getInt32("quantity");
        }
    }
}
