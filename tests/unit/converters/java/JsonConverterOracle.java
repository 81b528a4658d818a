// What Kafka Connect's JsonConverter writes and reads, for tests/integration/test_json_converter_interop.py.
//
// Run as a single-file program: java -cp "<connect jar set>/*" JsonConverterOracle.java < commands
// Commands, one per line, tab-separated:
//   java                          -> "java\t<java.version>\t<java.vm.name>"
//   settings <s1> <s2> ...        -> "settings\t<n>": one JsonConverter per setting, each written
//                                    "schemas.enable=true,decimal.format=NUMERIC,..." (value converters)
//   write <case JSON>             -> per setting, tab-separated: "<bytes> <read back>" where <bytes> is the hex
//                                    of fromConnectData(topic, schema, value) ("-" for null) and <read back> the
//                                    canonical text of toConnectData on those bytes; "!<error>" for an exception
//   read <setting index> <hex|->  -> canonical text of toConnectData(topic, bytes), or "!<error>"
//
// A case is {"schema": <Connect's envelope schema JSON, or null>, "value": <typed value>}. The schema is parsed
// by JsonConverter.asConnectSchema; the value is built here from an exact typed form, never by JsonConverter:
//   INT8..INT64 JSON integers; FLOAT32/FLOAT64 hex of Float.floatToRawIntBits / Double.doubleToRawLongBits;
//   BOOLEAN true/false; STRING a JSON string; BYTES hex; ARRAY a list; MAP a list of [key, value] pairs
//   (a LinkedHashMap, so entries keep their order); STRUCT an object by field name (absent = not put);
//   Decimal the unscaled integer as a string; Date int days; Time int ms; Timestamp long ms; null null.
//   Without a schema: null, or a tagged pair ["i64"|"i32", n], ["f64", bits hex], ["s", text], ["b", bool],
//   ["y", hex], ["arr", [..]], ["map", [[k, v], ..]].
//
// Canonical text (the test renders Kopycat's SchemaAndValue the same way): <schema>|<value>, where
//   schema = "none" or "(" type ["?" if optional] ",n=" name ",v=" version ",d=" doc ",p=" params ",def=" default
//            [",items=" s | ",keys=" s ",values=" s | ",fields=" name ":" s ";" ...] ")"
//   value  = "null" | i8:n | i16:n | i32:n | i64:n | f32:<bits> | f64:<bits> | b:true | s:<text> | y:<hex>
//            | dec:<unscaled>e<scale> | date:<ms> | time:<ms> | ts:<ms> | [v,..] | {k=v,..} sorted | struct{f=v,..}
// Texts are escaped: UTF-8 bytes outside [A-Za-z0-9_.-] as %XX.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Time;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.json.JsonConverter;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class JsonConverterOracle {
    static final String TOPIC = "topic";
    static final ObjectMapper MAPPER = new ObjectMapper();
    static final List<JsonConverter> CONVERTERS = new ArrayList<>();
    static final JsonConverter SCHEMA_READER = converter("schemas.enable=true");

    static JsonConverter converter(String setting) {
        Map<String, String> config = new HashMap<>();
        for (String pair : setting.split(",")) {
            String[] kv = pair.split("=", 2);
            config.put(kv[0], kv[1]);
        }
        JsonConverter converter = new JsonConverter();
        converter.configure(config, false);
        return converter;
    }

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

    static String esc(String s) {
        StringBuilder sb = new StringBuilder();
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xff);
            boolean plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '_' || c == '.' || c == '-';
            sb.append(plain ? String.valueOf(c) : String.format("%%%02X", b & 0xff));
        }
        return sb.toString();
    }

    static String error(Throwable e) {
        return "!" + e.getClass().getSimpleName() + ":" + esc(String.valueOf(e.getMessage()));
    }

    // ------------------------------------------------------------------ typed form -> Connect value

    static Object build(Schema schema, JsonNode node) {
        if (node == null || node.isNull()) return null;
        String name = schema.name();
        if (Decimal.LOGICAL_NAME.equals(name)) {
            return new BigDecimal(new BigInteger(node.textValue()), Integer.parseInt(schema.parameters().get("scale")));
        }
        if (Date.LOGICAL_NAME.equals(name) || Time.LOGICAL_NAME.equals(name)) {
            return new java.util.Date(node.longValue() * (Date.LOGICAL_NAME.equals(name) ? 86400000L : 1L));
        }
        if (Timestamp.LOGICAL_NAME.equals(name)) return new java.util.Date(node.longValue());
        switch (schema.type()) {
            case INT8: return (byte) node.intValue();
            case INT16: return (short) node.intValue();
            case INT32: return node.intValue();
            case INT64: return node.longValue();
            case FLOAT32: return Float.intBitsToFloat(Integer.parseUnsignedInt(node.textValue(), 16));
            case FLOAT64: return Double.longBitsToDouble(Long.parseUnsignedLong(node.textValue(), 16));
            case BOOLEAN: return node.booleanValue();
            case STRING: return node.textValue();
            case BYTES: return unhex(node.textValue());
            case ARRAY: {
                List<Object> out = new ArrayList<>();
                for (JsonNode element : node) out.add(build(schema.valueSchema(), element));
                return out;
            }
            case MAP: {
                Map<Object, Object> out = new LinkedHashMap<>();
                for (JsonNode pair : node) {
                    out.put(build(schema.keySchema(), pair.get(0)), build(schema.valueSchema(), pair.get(1)));
                }
                return out;
            }
            case STRUCT: {
                Struct out = new Struct(schema);
                for (Field field : schema.fields()) {
                    JsonNode value = node.get(field.name());
                    if (value != null && !value.isNull()) out.put(field, build(field.schema(), value));
                }
                return out;
            }
            default: throw new IllegalArgumentException("no type " + schema.type());
        }
    }

    static Object buildSchemaless(JsonNode node) {
        if (node == null || node.isNull()) return null;
        String tag = node.get(0).textValue();
        JsonNode v = node.get(1);
        switch (tag) {
            case "i64": return v.longValue();
            case "i32": return v.intValue();
            case "f64": return Double.longBitsToDouble(Long.parseUnsignedLong(v.textValue(), 16));
            case "s": return v.textValue();
            case "b": return v.booleanValue();
            case "y": return unhex(v.textValue());
            case "arr": {
                List<Object> out = new ArrayList<>();
                for (JsonNode element : v) out.add(buildSchemaless(element));
                return out;
            }
            case "map": {
                Map<Object, Object> out = new LinkedHashMap<>();
                for (JsonNode pair : v) out.put(buildSchemaless(pair.get(0)), buildSchemaless(pair.get(1)));
                return out;
            }
            default: throw new IllegalArgumentException("no tag " + tag);
        }
    }

    // ------------------------------------------------------------------ Connect data -> canonical text

    static String canonSchema(Schema s) {
        if (s == null) return "none";
        StringBuilder sb = new StringBuilder("(").append(s.type().getName()).append(s.isOptional() ? "?" : "");
        sb.append(",n=").append(s.name() == null ? "-" : esc(s.name()));
        sb.append(",v=").append(s.version() == null ? "-" : s.version().toString());
        sb.append(",d=").append(s.doc() == null ? "-" : esc(s.doc()));
        sb.append(",p=");
        if (s.parameters() == null) {
            sb.append("-");
        } else {
            for (Map.Entry<String, String> e : new TreeMap<>(s.parameters()).entrySet()) {
                sb.append(esc(e.getKey())).append(":").append(esc(e.getValue())).append(";");
            }
        }
        sb.append(",def=").append(canon(s, s.defaultValue()));
        switch (s.type()) {
            case ARRAY: sb.append(",items=").append(canonSchema(s.valueSchema())); break;
            case MAP:
                sb.append(",keys=").append(canonSchema(s.keySchema()));
                sb.append(",values=").append(canonSchema(s.valueSchema()));
                break;
            case STRUCT:
                sb.append(",fields=");
                for (Field f : s.fields()) sb.append(esc(f.name())).append(":").append(canonSchema(f.schema())).append(";");
                break;
            default: break;
        }
        return sb.append(")").toString();
    }

    static String canon(Schema s, Object v) {
        if (v == null) return "null";
        if (s == null) return canonSchemaless(v);
        String name = s.name();
        if (Decimal.LOGICAL_NAME.equals(name)) {
            BigDecimal d = (BigDecimal) v;
            return "dec:" + d.unscaledValue() + "e" + d.scale();
        }
        if (Date.LOGICAL_NAME.equals(name)) return "date:" + ((java.util.Date) v).getTime();
        if (Time.LOGICAL_NAME.equals(name)) return "time:" + ((java.util.Date) v).getTime();
        if (Timestamp.LOGICAL_NAME.equals(name)) return "ts:" + ((java.util.Date) v).getTime();
        switch (s.type()) {
            case INT8: return "i8:" + (Byte) v;
            case INT16: return "i16:" + (Short) v;
            case INT32: return "i32:" + (Integer) v;
            case INT64: return "i64:" + (Long) v;
            case FLOAT32: return String.format("f32:%08x", Float.floatToRawIntBits((Float) v));
            case FLOAT64: return String.format("f64:%016x", Double.doubleToRawLongBits((Double) v));
            case BOOLEAN: return "b:" + (Boolean) v;
            case STRING: return "s:" + esc((String) v);
            case BYTES: return "y:" + hex(bytes(v));
            case ARRAY: {
                List<String> out = new ArrayList<>();
                for (Object element : (List<?>) v) out.add(canon(s.valueSchema(), element));
                return "[" + String.join(",", out) + "]";
            }
            case MAP: {
                List<String> out = new ArrayList<>();
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    out.add(canon(s.keySchema(), e.getKey()) + "=" + canon(s.valueSchema(), e.getValue()));
                }
                Collections.sort(out);
                return "{" + String.join(",", out) + "}";
            }
            case STRUCT: {
                Struct struct = (Struct) v;
                List<String> out = new ArrayList<>();
                for (Field f : s.fields()) out.add(esc(f.name()) + "=" + canon(f.schema(), struct.getWithoutDefault(f.name())));
                return "struct{" + String.join(",", out) + "}";
            }
            default: throw new IllegalArgumentException("no type " + s.type());
        }
    }

    static byte[] bytes(Object v) {
        if (v instanceof byte[]) return (byte[]) v;
        ByteBuffer buffer = ((ByteBuffer) v).duplicate();
        byte[] out = new byte[buffer.remaining()];
        buffer.get(out);
        return out;
    }

    static String canonSchemaless(Object v) {
        if (v instanceof Long) return "i64:" + v;
        if (v instanceof Integer) return "i32:" + v;
        if (v instanceof Double) return String.format("f64:%016x", Double.doubleToRawLongBits((Double) v));
        if (v instanceof Boolean) return "b:" + v;
        if (v instanceof String) return "s:" + esc((String) v);
        if (v instanceof byte[] || v instanceof ByteBuffer) return "y:" + hex(bytes(v));
        if (v instanceof BigDecimal) return canon(Decimal.schema(((BigDecimal) v).scale()), v);
        if (v instanceof List) {
            List<String> out = new ArrayList<>();
            for (Object element : (List<?>) v) out.add(canon(null, element));
            return "[" + String.join(",", out) + "]";
        }
        if (v instanceof Map) {
            List<String> out = new ArrayList<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                out.add(canon(null, e.getKey()) + "=" + canon(null, e.getValue()));
            }
            Collections.sort(out);
            return "{" + String.join(",", out) + "}";
        }
        if (v instanceof Struct) return canon(((Struct) v).schema(), v);
        return "?" + v.getClass().getName();
    }

    // ------------------------------------------------------------------ commands

    static String read(JsonConverter converter, byte[] data) {
        try {
            SchemaAndValue read = converter.toConnectData(TOPIC, data);
            return canonSchema(read.schema()) + "|" + canon(read.schema(), read.value());
        } catch (Exception e) {
            return error(e);
        }
    }

    static String write(String caseJson) throws Exception {
        JsonNode node = MAPPER.readTree(caseJson);
        JsonNode schemaNode = node.get("schema");
        Schema schema = schemaNode.isNull() ? null : SCHEMA_READER.asConnectSchema(schemaNode);
        Object value = schema == null ? buildSchemaless(node.get("value")) : build(schema, node.get("value"));
        List<String> columns = new ArrayList<>();
        for (JsonConverter converter : CONVERTERS) {
            byte[] data;
            try {
                data = converter.fromConnectData(TOPIC, schema, value);
            } catch (Exception e) {
                columns.add(error(e) + " -");
                continue;
            }
            columns.add((data == null ? "-" : hex(data)) + " " + read(converter, data));
        }
        return String.join("\t", columns);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            switch (f[0]) {
                case "java":
                    System.out.println("java\t" + System.getProperty("java.version") + "\t"
                            + System.getProperty("java.vm.name"));
                    break;
                case "settings":
                    for (int i = 1; i < f.length; i++) CONVERTERS.add(converter(f[i]));
                    System.out.println("settings\t" + CONVERTERS.size());
                    break;
                case "write":
                    System.out.println(write(f[1]));
                    break;
                case "read":
                    System.out.println(read(CONVERTERS.get(Integer.parseInt(f[1])), f[2].equals("-") ? null : unhex(f[2])));
                    break;
                default:
                    throw new IllegalArgumentException("unknown command " + f[0]);
            }
        }
    }
}
