"""The JsonConverter bench's pieces that need no JVM: the rows handed to Java and its output read back."""

from __future__ import annotations

from bench import bench_json_converter as bench


def test_rows_reach_java_as_ten_tab_separated_fields_with_exact_doubles() -> None:
    [line] = bench.tsv_lines([bench._row(3)]).splitlines()

    fields = line.split("\t")
    assert len(fields) == 10
    assert fields[:5] == ["10000000003", "3", "customer 3", "user3@example.com", "Oslo"]
    assert float(fields[5]) == bench._row(3)["amount"]
    assert fields[7] == "true"
    assert fields[9] == str(1_700_000_000_000 + 3 * 997)


def test_java_output_gives_the_first_bytes_and_each_paths_median_round() -> None:
    output = "first\t7b7d\nserialize\t3000000000\nserialize\t1000000000\nserialize\t2000000000\n" \
             "deserialize\t4000000000\ndeserialize\t5000000000\nchecksum\t12\n"

    first, write, read = bench.parse_java(output, 1_000)

    assert first == b"{}"
    assert (write.wall_s, write.walls, write.rate) == (2.0, (3.0, 1.0, 2.0), 500.0)
    assert (read.wall_s, read.walls) == (4.0, (4.0, 5.0))
