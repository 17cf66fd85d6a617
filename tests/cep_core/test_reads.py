"""What a query reads of its events (cep_core.reads): the types and attributes found in its
text, and the one-line error for a query that reads what its stream does not carry."""

from __future__ import annotations

import pytest

import cep_core
from cep_core.reads import check_events, reads

METER = """SEQ (smartMeterEvent a+[])
WHERE SAME[houseID] AND a[i].accLoad > λ[a[i].houseID, a[i].time]
AND a[i].time + δ = a[i+1].time AND LENGTH(a+[]) > m
WITHIN 2h
RETURN userNonComplianceEvent(a[last].time, a[last].houseID, a[last].accLoad AS load)"""
ALERT = """SELECT COUNT(DISTINCT houseID) AS alertNum, SUM(accLoad * k) AS sumAccLoad
FROM userNonComplianceEvent STREAM
WHERE SAME[groupID] AND alertNum > 2
GROUP BY time
RETURN groupAlertEvent(groupID, sumAccLoad)"""
STREAM = {"smartMeterEvent": ("houseID", "groupID", "accLoad")}
PARAMS = {"λ": {}, "δ": 5, "m": 3}


def test_a_pattern_query_reads_its_variables_attributes_and_the_same_names():
    found = reads(cep_core.parse(METER))
    assert list(found.types) == ["smartMeterEvent"]
    assert {a for _, a in found.attributes} == {"houseID", "accLoad", "time"}
    assert found.attributes[("smartMeterEvent", "accLoad")] == (2, 25)  # line, column
    assert cep_core.compile(METER, PARAMS).output_fields == ("time", "houseID", "load")


def test_an_aggregation_reads_its_groups_and_the_arguments_that_are_not_parameters():
    found = reads(cep_core.parse(ALERT), params={"k"})
    assert list(found.types) == ["userNonComplianceEvent"]
    assert {a for _, a in found.attributes} == {"houseID", "accLoad", "groupID", "time"}
    # the group's time added to what RETURN names
    assert cep_core.compile(ALERT, {"k": 2}).output_fields == ("groupID", "sumAccLoad", "time")
    assert ("userNonComplianceEvent", "k") in reads(cep_core.parse(ALERT)).attributes


def test_what_the_stream_carries_passes():
    found = check_events(cep_core.compile(METER, PARAMS), STREAM, outputs=("time", "load"))
    assert list(found.types) == ["smartMeterEvent"]


@pytest.mark.parametrize("text, words", [
    (METER.replace("a[i].accLoad >", "a[i].accLod >"),
     "meter: line 2, column 25: smartMeterEvent events carry no attribute 'accLod' "
     "(did you mean 'accLoad'? they carry type, time, houseID, groupID, accLoad)"),
    (METER.replace("a[last].accLoad AS load", "a[last].acc AS load"),
     "meter: line 5, column 62: smartMeterEvent events carry no attribute 'acc'"),
    (METER.replace("SAME[houseID]", "SAME[house]"),
     "carry no attribute 'house' (did you mean 'houseID'?"),
    (METER.replace("smartMeterEvent a", "smartMeterEvnt a"),
     "meter: line 1, column 6: event type 'smartMeterEvnt' is not in this stream "
     "(did you mean 'smartMeterEvent'? it carries smartMeterEvent)"),
])
def test_what_the_stream_does_not_carry_is_one_line_naming_it(text, words):
    with pytest.raises(cep_core.QuerySemanticError) as raised:
        check_events(cep_core.compile(text, PARAMS, source="meter"), STREAM, source="meter")
    assert words in str(raised.value) and "\n" not in str(raised.value)
