// What Kafka Connect's own FileOffsetBackingStore (connect-standalone's offsets file) writes and
// reads, for tests/unit/storage/test_java_offsets_file.py.
//
// Run as a single-file program: java -cp "<connect-runtime libs>/*" FileOffsetsOracle.java <command> <file>
//   write <file>  stdin: one entry per line, "<key hex>\t<value hex>" or "<key hex>\t-" for a null
//                 value; the entries are set in one FileOffsetBackingStore.set() call, which saves
//                 the file as connect-standalone does.
//   read <file>   FileOffsetBackingStore.start() loads the file; prints "<key hex>\t<value hex or ->"
//                 per entry, sorted, then "partitions <connector>\t<n>" for every connector named in
//                 a key (the store's own connectorPartitions), then "end".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.runtime.standalone.StandaloneConfig;
import org.apache.kafka.connect.storage.FileOffsetBackingStore;

public class FileOffsetsOracle {
    static String hex(ByteBuffer buffer) {
        if (buffer == null) return "-";
        StringBuilder sb = new StringBuilder();
        for (byte x : buffer.array()) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    static ByteBuffer unhex(String s) {
        if (s.equals("-")) return null;
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return ByteBuffer.wrap(out);
    }

    public static void main(String[] args) throws Exception {
        JsonConverter keys = new JsonConverter();
        keys.configure(Map.of("schemas.enable", "false"), true);
        Probe store = new Probe(keys);
        Map<String, String> props = new HashMap<>();
        props.put("key.converter", JsonConverter.class.getName());
        props.put("value.converter", JsonConverter.class.getName());
        props.put("offset.storage.file.filename", args[1]);
        store.configure(new StandaloneConfig(props));
        store.start();
        try {
            if (args[0].equals("write")) {
                Map<ByteBuffer, ByteBuffer> values = new LinkedHashMap<>();
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                for (String line; (line = in.readLine()) != null; ) {
                    if (line.isEmpty()) continue;
                    String[] parts = line.split("\t");
                    values.put(unhex(parts[0]), unhex(parts[1]));
                }
                store.set(values, null).get();
            } else {
                List<String> lines = new ArrayList<>();
                Set<String> connectors = new TreeSet<>();
                for (Map.Entry<ByteBuffer, ByteBuffer> e : store.entries().entrySet()) {
                    lines.add(hex(e.getKey()) + "\t" + hex(e.getValue()));
                    Object key = keys.toConnectData("", e.getKey().array()).value();
                    if (key instanceof List && !((List<?>) key).isEmpty()) connectors.add(String.valueOf(((List<?>) key).get(0)));
                }
                Collections.sort(lines);
                for (String l : lines) System.out.println(l);
                for (String c : connectors) System.out.println("partitions " + c + "\t" + store.connectorPartitions(c).size());
                System.out.println("end");
            }
        } finally {
            store.stop();
        }
    }

    static class Probe extends FileOffsetBackingStore {
        Probe(JsonConverter keys) {
            super(keys);
        }

        Map<ByteBuffer, ByteBuffer> entries() {
            return data;
        }
    }
}
