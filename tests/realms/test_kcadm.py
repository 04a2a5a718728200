"""The admin CLI's parsing and printing (the end-to-end script is in tests/idp/test_admin_clients.py)."""
import pytest

from realms.kcadm import _glue_values, build_parser
from realms.kcadm.client import CliError, Connection
from realms.kcadm.output import as_csv, merge, parse_fields, pretty, select, set_attribute


def test_set_attribute_paths_and_json_values():
    body = {}
    for assignment in ("enabled=true", "accessTokenLifespan=300", "name=plain text", 'uris=["a","b"]',
                       "attributes.dept=ops", "list[1].x=1", 'quoted="123"'):
        set_attribute(body, assignment)
    assert body == {"enabled": True, "accessTokenLifespan": 300, "name": "plain text", "uris": ["a", "b"],
                    "attributes": {"dept": "ops"}, "list": [None, {"x": 1}], "quoted": "123"}
    for bad in ("novalue", "=x", "a..b=1", "a[x]=1"):
        with pytest.raises(CliError):
            set_attribute({}, bad)


def test_merge_fields_and_output():
    assert merge({"a": {"x": 1, "y": 2}, "b": [1]}, {"a": {"y": 3}, "b": [2]}) == {"a": {"x": 1, "y": 3}, "b": [2]}
    fields = parse_fields("id,attributes(dept),missing")
    users = [{"id": "1", "username": "u", "attributes": {"dept": ["ops"], "site": ["x"]}}]
    assert select(users, fields) == [{"id": "1", "attributes": {"dept": ["ops"]}}]
    for bad in ("a(b", "a)b", "(b)"):
        with pytest.raises(CliError):
            parse_fields(bad)
    assert pretty(users) == ('[ {\n  "id" : "1",\n  "username" : "u",\n  "attributes" : {\n'
                             '    "dept" : [ "ops" ],\n    "site" : [ "x" ]\n  }\n} ]')
    assert pretty({}) == "{ }" and pretty([]) == "[ ]"
    assert as_csv(select(users, fields), header=True) == '"id","attributes.dept"\n"1","[""ops""]"'
    assert as_csv([{"n": "a b"}, {"n": None}], quotes=False) == "a b\n"


def test_values_starting_with_a_dash_stay_values():
    parser = build_parser()
    args = parser.parse_args(_glue_values(parser, ["create", "users", "--secret", "-Xy", "-s", "n=-1"]))
    assert (args.secret, args.set) == ("-Xy", ["n=-1"])
    args = parser.parse_args(_glue_values(parser, ["get", "users", "--client", "svc", "--secret", "--x"]))
    assert (args.client, args.secret) == ("svc", "--x")


def test_endpoint_urls():
    conn = Connection("https://id.example/", "master", {})
    assert conn.url("realms", None) == "https://id.example/admin/realms"
    assert conn.url("realms/demo", None) == "https://id.example/admin/realms/demo"
    assert conn.url("serverinfo", None) == "https://id.example/admin/serverinfo"
    assert conn.url("users", "demo") == "https://id.example/admin/realms/demo/users"
    assert conn.url("users", None) == "https://id.example/admin/realms/master/users"
    assert conn.url("/realms/x/users", None) == "https://id.example/admin/realms/x/users"
    assert conn.url("https://other/admin/realms", None) == "https://other/admin/realms"
