// What Java does, for tests/unit/storage/test_java_oracle.py: java.util.HashMap iteration order,
// String.hashCode, Kafka's Utils.murmur2 and, when connect-json is on the class path, the bytes
// Kafka Connect's JsonConverter (schemas.enable=false) writes for offsets keys and values.
//
// Run as a single-file program: java -cp "<kafka libs>/*" OffsetOracle.java < commands
// Commands, one per line, tab-separated, strings as hex of their UTF-8 bytes:
//   order <initialCapacity or -> <key>...   -> the keys in HashMap iteration order
//   hash <string>                          -> String.hashCode()
//   murmur <bytes>                         -> Utils.murmur2(bytes)
//   goldens                                -> "<name>\t<hex of serialized bytes>" per golden case, then "end"
import java.nio.charset.StandardCharsets;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.util.*;

public class OffsetOracle {
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

    static String str(String hex) {
        return new String(unhex(hex), StandardCharsets.UTF_8);
    }

    static Object converter;
    static Method fromConnectData;

    static byte[] serialize(Object value) throws Exception {
        return (byte[]) fromConnectData.invoke(converter, "connect-offsets", null, value);
    }

    static void goldens() throws Exception {
        Class<?> cls;
        try {
            cls = Class.forName("org.apache.kafka.connect.json.JsonConverter");
        } catch (ClassNotFoundException e) {
            System.out.println("unavailable");
            return;
        }
        converter = cls.getDeclaredConstructor().newInstance();
        cls.getMethod("configure", Map.class, boolean.class).invoke(converter, Map.of("schemas.enable", "false"), true);
        fromConnectData = cls.getMethod("fromConnectData", String.class,
                Class.forName("org.apache.kafka.connect.data.Schema"), Object.class);
        // As io.confluent.connect.jdbc.source.OffsetProtocols.sourcePartitionForProtocolV1
        Map<String, String> jdbc = new HashMap<>();
        jdbc.put("table", "db.public.orders");
        jdbc.put("protocol", "1");
        System.out.println("jdbc_key\t" + hex(serialize(Arrays.asList("jdbc-orders", jdbc))));
        // As TimestampIncrementingOffset.toMap
        Map<String, Object> jdbcOffset = new HashMap<>(3);
        jdbcOffset.put("incrementing", 4711L);
        jdbcOffset.put("timestamp", 1714521600000L);
        jdbcOffset.put("timestamp_nanos", 123000000L);
        System.out.println("jdbc_value\t" + hex(serialize(jdbcOffset)));
        // As org.apache.kafka.connect.mirror.MirrorUtils.wrapPartition / wrapOffset
        Map<String, Object> mm = new HashMap<>();
        mm.put("topic", "t");
        mm.put("partition", 0);
        mm.put("cluster", "a");
        System.out.println("mirror_key\t" + hex(serialize(Arrays.asList("mm2", mm))));
        System.out.println("mirror_value\t" + hex(serialize(Collections.singletonMap("offset", 42L))));
        // As org.apache.kafka.connect.file.FileStreamSourceTask
        System.out.println("file_key\t" + hex(serialize(Arrays.asList("local-file-source",
                Collections.singletonMap("filename", "/x")))));
        System.out.println("file_value\t" + hex(serialize(Collections.singletonMap("position", 1234L))));
        Map<String, Object> text = new HashMap<>();
        text.put("name", "caf\u00e9 \u65e5\u672c \ud83d\ude00 \"q\" \\ / \t\n\u0001\u001f\u007f\u2028");
        System.out.println("text_key\t" + hex(serialize(Arrays.asList("conn\u00e9", text))));
        Map<String, Object> numbers = new LinkedHashMap<>();
        numbers.put("d", 1.0E10);
        numbers.put("e", 0.001);
        numbers.put("f", 1.5);
        numbers.put("g", -0.0);
        numbers.put("h", 123456789012L);
        numbers.put("i", true);
        numbers.put("j", null);
        numbers.put("k", new byte[] {1, 2, 3});
        numbers.put("l", 1.0E-4);
        numbers.put("m", 100.0);
        System.out.println("numbers_value\t" + hex(serialize(numbers)));
        System.out.println("null_partition_key\t" + hex(serialize(Arrays.asList("c", null))));
        System.out.println("empty_partition_key\t" + hex(serialize(Arrays.asList("c", new HashMap<>()))));
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            switch (f[0]) {
                case "order": {
                    Map<String, Object> m = f[1].equals("-") ? new HashMap<>() : new HashMap<>(Integer.parseInt(f[1]));
                    for (int i = 2; i < f.length; i++) m.put(str(f[i]), i);
                    List<String> out = new ArrayList<>();
                    for (String k : m.keySet()) out.add(hex(k.getBytes(StandardCharsets.UTF_8)));
                    System.out.println(String.join("\t", out));
                    break;
                }
                case "hash":
                    System.out.println(str(f[1]).hashCode());
                    break;
                case "murmur":
                    System.out.println(org.apache.kafka.common.utils.Utils.murmur2(unhex(f[1])));
                    break;
                case "goldens":
                    goldens();
                    System.out.println("end");
                    break;
                default:
                    throw new IllegalArgumentException("unknown command " + f[0]);
            }
        }
    }
}
