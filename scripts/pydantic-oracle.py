#!/usr/bin/env python3
"""
Writes test/support/pydantic-oracle.json: what pydantic v2 (lax mode, validate_python on the value
json.loads gives, as FastAPI validates a body, or on the text of a query parameter) answers for
each input of a set of field types, so test/http/pydantic-oracle.test.ts can hold Engram's own
validators (src/http/shared/validate.ts) to it. Run it where pydantic is installed:

    python3 scripts/pydantic-oracle.py

Each case: the field (kind and bounds), the input as JSON text, and either the value (a datetime
as microseconds since the epoch, naive ones read as UTC) or every error: type, loc below the
field, msg, input and ctx.
"""
import json
import sys
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import pydantic
from pydantic import BaseModel, Field, ValidationError

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def model(annotation):
    return pydantic.create_model('Case', v=(annotation, ...))


FIELDS = {
    'bool': ({'kind': 'bool'}, bool),
    'int': ({'kind': 'int'}, int),
    'int 1..100': ({'kind': 'int', 'ge': 1, 'le': 100}, Annotated[int, Field(ge=1, le=100)]),
    # the reference's float fields have float bounds (`le=1.0`), written `1.0` in messages
    'float 0..1': ({'kind': 'float', 'ge': 0, 'le': 1}, Annotated[float, Field(ge=0.0, le=1.0)]),
    'str 1..5': ({'kind': 'str', 'minLength': 1, 'maxLength': 5}, Annotated[str, Field(min_length=1, max_length=5)]),
    'str id': ({'kind': 'str', 'minLength': 1, 'maxLength': 512, 'pattern': '^[a-zA-Z0-9_-]+$'},
               Annotated[str, Field(min_length=1, max_length=512, pattern='^[a-zA-Z0-9_-]+$')]),
    'datetime': ({'kind': 'datetime'}, datetime),
    'list': ({'kind': 'list', 'minLength': 1, 'maxLength': 3}, Annotated[list[int], Field(min_length=1, max_length=3)]),
    'literal': ({'kind': 'literal', 'values': ['low', 'high']}, Literal['low', 'high']),
    'enum': ({'kind': 'enum', 'values': ['low', 'high']}, Enum('Level', {'low': 'low', 'high': 'high'}, type=str)),
    'dict': ({'kind': 'dict'}, dict[str, Any]),
    'record': ({'kind': 'record'}, dict[str, bool]),
    'nullable': ({'kind': 'nullable'}, Optional[int]),
    'model': ({'kind': 'model'}, pydantic.create_model('Inner', a=(int, ...), b=(str, 'x'), c=(Optional[list[int]], None))),
}

COMMON = ['null', 'true', 'false', '[]', '{}', '""', '"abc"', '0', '1', '-1', '2', '0.5', '1.5', '[1]', '{"a": 1}']

INPUTS = {
    'bool': COMMON + ['1.0', '0.0', '2.0', '-0.0', '"true"', '"True"', '"TRUE"', '"yes"', '"no"', '"on"', '"off"', '"t"',
                      '"f"', '"y"', '"n"', '"1"', '"0"', '"2"', '"maybe"', '" true"', '"true "', '"1.0"', '"0.0"', '"YES"'],
    'int': COMMON + ['2.0', '1e3', '"5"', '"5.0"', '"5.00"', '"5."', '"05"', '" 5 "', '"+5"', '"-5"', '"5_0"', '"5__0"', '"_5"',
                     '"5_"', '"1e2"', '"0x10"', '"1.5"', '"-0"', '"+-1"', '"1 0"', '"2_0.0"', '"2.0_0"', '"\\t7\\n"', '"12345678901234"'],
    'int 1..100': COMMON + ['100', '101', '2.0', '"100"', '"101"', '"0"', '"50.0"', '1e2', '"1e2"'],
    'float 0..1': COMMON + ['1.0', '-0.1', '"0.5"', '" 0.5 "', '"1e-1"', '"inf"', '"nan"', '"-inf"', '"1_0"', '"0.5.5"', '".5"', '"5."',
                            '"Infinity"', '"-INF"', '"NaN"', '"0x1"', '"1e"', '"_1"', '"1__0"', '"0_.5"', '"0._5"', '"0.0_1"', '"+0.5"', '"1E-1"',
                            '"١"', '"0.5e0"', '"-0"', '"  "'],
    'str 1..5': COMMON + ['"a"', '"abcde"', '"abcdef"', '"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"', '"\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00"',
                          '"\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00"', '"     "'],
    'str id': COMMON + ['"ok_1"', '"no space"', '"caf\\u00e9"', '"a-b"', '"a.b"', '"a\\nb"'],
    'datetime': COMMON + [
        '"2024-01-01"', '"2024-01-01T10:00"', '"2024-01-01T10:00:00"', '"2024-01-01T10:00:00Z"', '"2024-01-01 10:00:00"',
        '"2024-01-01t10:00:00z"', '"2024-01-01_10:00:00"', '"2024-01-01T10:00:00.5Z"', '"2024-01-01T10:00:00.123456Z"',
        '"2024-01-01T10:00:00.1234567Z"', '"2024-01-01T10:00:00,5Z"', '"2024-01-01T10:00:00+02:00"', '"2024-01-01T10:00:00-0530"',
        '"2024-01-01T10:00:00+02"', '"2024-02-30"', '"2024-13-01"', '"2024-01-01T24:00:00"', '"2024-01-01T10:60:00"',
        '"2024-01-01T10:00:60"', '"2023-02-29"', '"2024-02-29"', '"0001-01-01"', '"9999-12-31T23:59:59"', '"tomorrow"',
        '"2024"', '"1700000000"', '"1700000000.5"', '"+1700000000"', '"-1700000000"', '"1700000000."', '"1700000000000"',
        '"1e9"', '" 1700000000"', '1700000000', '1700000000.25', '1700000000000', '-62135596800', '253402300799',
        '"2024-1-01"', '"20240101"', '"2024-01-01T"', '"2024-01-01T10"', '"2024-01-01T10:00:00ZZ"',
        '"2024-01-01X10:00"', '"2024-01-01T10:0"', '"2024-13-01T10:00:00"', '"2024-02-30T10:00"', '"abcd-01-01"', '"2024/01/01"',
        '"2024-0a-01"', '"2024-01-0a"', '"2024-00-10"', '"2024-13-0a"', '"2024-02-30T25:00"', '"2024-01-01T10:00:00."',
        '"2024-01-01T10:00:00.Z"', '"2024-01-01T10:00:00+2:00"', '"2024-01-01T10:00:00+24:00"', '"2024-01-01T10:00:00+0200"',
        '"2024-01-01T10:00:00 +02:00"', '"0000-01-01"', '"0000-01-01T10:00"', '"2024-01-01T10:00:00.1234567890123"', '"2024-01-01 "',
        '"2024-01-01T10:00:00+02:30:00"', '"2024-01-01T10:00:00.5+02:00"', '"2024-01-01T10:00:00-00:00"', '"2024-W01-1"', '"2024-001"',
        '"2024-01-01T10:00:00+23:59"', '"2024-01-01T10:00:00+12:60"', '"1900-02-29"', '"2000-02-29"', '"0099-01-01T00:00:00Z"',
    ],
    'list': COMMON + ['[1, 2, 3]', '[1, 2, 3, 4]', '["1", "x", 3]', '["x", "y", 1, 2, 3]', '[null]', '[1.5]', '"[1]"', '[[1]]'],
    'literal': COMMON + ['"low"', '"high"', '"LOW"', '"medium"', '" low"'],
    'enum': COMMON + ['"low"', '"high"', '"LOW"', '"medium"'],
    'dict': COMMON + ['{"a": [1, {"b": null}]}', '{"": 1}'],
    'record': COMMON + ['{"a": true, "b": "yes"}', '{"a": "maybe", "b": 2, "c": true}', '{"a": null}'],
    'nullable': COMMON + ['"5"', '"x"', '5.5'],
    'model': COMMON + ['{"a": 1}', '{"a": "2", "b": "y", "c": [1, "2"]}', '{"b": 5, "c": ["x", 2, "y"]}', '{"a": null, "c": null}',
                      '{"a": 1, "extra": true}', '{"a": 1, "b": null}', '{"a": 1.5, "b": [], "c": {}}'],
}


def plain(value):
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
        delta = aware - EPOCH
        return {'micros': (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, BaseModel):
        return value.model_dump()
    return value


def wire(value):
    """A value as JSON gives it back (for the `input` of an error)."""
    return json.loads(json.dumps(value, default=str))


def main():
    cases = []
    for name, (field, annotation) in FIELDS.items():
        Case = model(annotation)
        for text in INPUTS[name]:
            value = json.loads(text)
            case = {'field': field, 'input': text}
            try:
                # as FastAPI validates a body or parameter: models read from attributes too, so a
                # nested model that is not an object is `model_attributes_type`, as at the top
                case['value'] = plain(Case.model_validate({'v': value}, from_attributes=True).v)
            except ValidationError as error:
                case['errors'] = []
                for found in error.errors(include_url=False):
                    item = {'type': found['type'], 'loc': list(found['loc'][1:]), 'msg': found['msg'], 'input': wire(found['input'])}
                    if 'ctx' in found:
                        item['ctx'] = {k: (v if isinstance(v, (int, float, str, bool)) else str(v)) for k, v in found['ctx'].items()}
                    case['errors'].append(item)
            cases.append(case)
    out = Path(__file__).resolve().parent.parent / 'test' / 'support' / 'pydantic-oracle.json'
    out.write_text(json.dumps({'pydantic': pydantic.VERSION, 'cases': cases}, indent=1, ensure_ascii=True) + '\n')
    print(f'{len(cases)} cases from pydantic {pydantic.VERSION} -> {out}', file=sys.stderr)


main()
