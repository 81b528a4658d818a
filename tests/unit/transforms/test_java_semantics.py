"""The Java behaviour SMT configs and results rely on: narrowing, parsing, date text, regexes."""

from __future__ import annotations

import re

import pytest

from kopycat.transforms._java import (
    SimpleDateFormat,
    compile_java_regex,
    date_format_for,
    java_int,
    java_replacement,
    parse_java_double,
    parse_java_int,
    saturate,
    wrap,
)


@pytest.mark.parametrize(("number", "bits", "expected"), [
    (300, 8, 44), (128, 8, -128), (-129, 8, 127), (2**31, 32, -(2**31)), (2**64 + 5, 64, 5), (-1, 16, -1)])
def test_integer_narrowing_keeps_the_low_bits(number, bits, expected):
    assert wrap(number, bits) == expected


@pytest.mark.parametrize(("number", "bits", "expected"), [
    (1e20, 32, 2**31 - 1), (-1e20, 64, -(2**63)), (float("nan"), 32, 0), (-2.9, 32, -2),
    (float("inf"), 64, 2**63 - 1)])
def test_double_to_int_saturates_and_truncates(number, bits, expected):
    assert saturate(number, bits) == expected


def test_double_to_byte_goes_through_int_first():
    # (byte) 1e10 == (byte) Integer.MAX_VALUE == -1
    assert java_int(1e10, 8) == -1
    assert java_int(300.7, 8) == 44


@pytest.mark.parametrize("text", ["1 ", "0x10", "1_000", "", "+", "4.0"])
def test_java_int_parsing_is_strict(text):
    with pytest.raises(ValueError):
        parse_java_int(text, 32)


@pytest.mark.parametrize(("text", "expected"), [("+7", 7), ("-0012", -12)])
def test_java_int_parsing_accepts_sign_and_leading_zeros(text, expected):
    assert parse_java_int(text, 8) == expected


@pytest.mark.parametrize(("text", "expected"), [(" 1.5 ", 1.5), ("1e3", 1000.0), ("2f", 2.0), (".5d", 0.5),
                                                ("-Infinity", float("-inf"))])
def test_java_double_parsing(text, expected):
    assert parse_java_double(text) == expected


@pytest.mark.parametrize(("millis", "expected"), [
    (0, "00:00:00.000Z"), (3_600_000, "01:00:00.000Z"), (86_400_000, "1970-01-02"),
    (86_400_001, "1970-01-02T00:00:00.001Z"), (-1, "23:59:59.999Z"), (1483425001864, "2017-01-03T06:30:01.864Z")])
def test_dates_print_as_kafkas_values_date_format_for(millis, expected):
    assert date_format_for(millis) == expected


def test_simple_date_format_resolution_is_its_finest_letter():
    assert SimpleDateFormat("yyyyMMdd").resolution_ms == 86_400_000
    assert SimpleDateFormat("yyyy-MM-dd HH").resolution_ms == 3_600_000
    assert SimpleDateFormat("mm:ss").resolution_ms == 1000
    assert SimpleDateFormat("SSS").resolution_ms == 1


def test_java_named_groups_and_quotes_are_translated():
    assert compile_java_regex("(?<name>a+)(?<=a)\\Q.*\\E").fullmatch("aa.*").group("name") == "aa"


@pytest.mark.parametrize(("replacement", "message"), [
    ("$", "group index is missing"), ("$x", "Illegal group reference"), ("$3", "No group 3"),
    ("${zz}", "No group with name"), ("a\\", "character to be escaped is missing")])
def test_bad_replacements_are_rejected_up_front(replacement, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        java_replacement(replacement, re.compile("(a)(b)"))
