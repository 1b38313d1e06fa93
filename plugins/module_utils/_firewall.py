# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The firewall's plan: who may reach the API, and which peer reaches the engine's ports.

Pure functions, no Ansible: ``firewall_plan`` checks the inputs and returns what the
nftables template needs, or every problem, each naming the variable and the fix. The
nodes' fabric addresses come checked from the fabric's plan (``_fabric_plan``).
"""

from __future__ import annotations

import ipaddress
import json

from ansible_collections.gb10.serving.plugins.module_utils._api_access import cidr_problems

API_CIDRS_VAR = "firewall_api_allowed_cidrs"
API_PORT_VAR = "firewall_api_port"
ENGINE_PORTS_VAR = "firewall_engine_ports"


def _port_problem(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(str(value), 10)
        except ValueError:
            return f"{name} ({value!r}) must be a TCP port number (1 to 65535)."
    if not 1 <= value <= 65535:
        return f"{name} ({value}) must be a TCP port number (1 to 65535)."
    return None


def _as_port(value):
    return value if isinstance(value, int) else int(str(value), 10)


def _networks(cidrs, problems, variable):
    """The allowed networks, merged and split by family (the engine's own CIDR checks)."""
    found = cidr_problems(cidrs, variable)
    if found:
        problems.extend(found)
        return [], []
    networks = [ipaddress.ip_network(cidr) for cidr in cidrs]
    # nftables refuses overlapping intervals in a set: merge them (10.1.0.0/16 inside
    # 10.0.0.0/8 is dropped, two halves of a /24 become the /24).
    return (
        [str(net) for net in ipaddress.collapse_addresses(n for n in networks if n.version == 4)],
        [str(net) for net in ipaddress.collapse_addresses(n for n in networks if n.version == 6)],
    )


def firewall_plan(fabric, host, api_cidrs, api_port, engine_ports, cidrs_variable=API_CIDRS_VAR):
    """This node's rules, from the fabric's plan and the firewall's inputs.

    ``fabric`` is the fabric role's plan of the whole cluster (``gb10.serving.fabric_plan``:
    ``{errors, nodes}``, each node with ``interface``, ``ipv4`` and ``peers``).
    ``cidrs_variable`` is the name the user set the networks under (``vllm_allowed_cidrs``
    when the firewall's own variable keeps its default). Returns ``{errors, ...}``: with
    errors, nothing else is usable.
    """
    problems = []
    v4, v6 = _networks(api_cidrs, problems, cidrs_variable)
    problem = _port_problem(API_PORT_VAR, api_port)
    if problem:
        problems.append(problem)
    if isinstance(engine_ports, (str, dict)) or not isinstance(engine_ports, (list, tuple)):
        problems.append(f"{ENGINE_PORTS_VAR} must be a list of TCP port numbers.")
        engine_ports = []
    for port in engine_ports:
        problem = _port_problem(ENGINE_PORTS_VAR, port)
        if problem:
            problems.append(problem)
    if not problems and _as_port(api_port) in [_as_port(p) for p in engine_ports]:
        problems.append(
            f"{API_PORT_VAR} ({api_port}) is also in {ENGINE_PORTS_VAR}: the API port is "
            "opened to the allowed networks, the engine's ports only to the peer; give the "
            "API (vllm_port) a port of its own."
        )
    # The engine's ports are kept to the fabric link, so the fabric's own checks apply.
    problems.extend(fabric.get("errors", []))
    node = fabric.get("nodes", {}).get(host)
    if node is None and not fabric.get("errors"):
        problems.append(
            f"{host} is not one of the cluster's nodes ({', '.join(sorted(fabric['nodes']))})."
        )
    if problems:
        return {"errors": problems}
    return {
        "errors": [],
        "api_port": _as_port(api_port),
        "api_cidrs_v4": v4,
        "api_cidrs_v6": v6,
        "engine_ports": sorted({_as_port(port) for port in engine_ports}),
        "fabric_interface": node["interface"],
        "fabric_ipv4": node["ipv4"],
        "peer_ipv4s": list(node["peers"]),
        # Each half of the port the fabric uses (fabric_rails), the first being the above.
        "rails": [
            {"interface": r["interface"], "ipv4": r["ipv4"], "peer_ipv4s": list(r["peers"])}
            for r in node.get("rails")
            or [{"interface": node["interface"], "ipv4": node["ipv4"], "peers": node["peers"]}]
        ],
    }


def _element(value):
    """A set element of `nft --json` output as a network string ("192.0.2.0/24")."""
    if isinstance(value, dict) and "prefix" in value:
        return str(ipaddress.ip_network(f"{value['prefix']['addr']}/{value['prefix']['len']}"))
    if isinstance(value, dict) and "range" in value:
        low, high = value["range"]
        return f"{low}-{high}"
    return str(ipaddress.ip_network(str(value)))


def _matches(rule):
    """A rule's match expressions as {(left key, ...): right} and its verdict."""
    found, verdict = {}, None
    for expr in rule.get("expr", []):
        if "match" in expr:
            left = expr["match"]["left"]
            if "meta" in left:
                key = ("meta", left["meta"]["key"])
            elif "payload" in left:
                key = (left["payload"]["protocol"], left["payload"]["field"])
            else:
                key = tuple(left)
            right = expr["match"]["right"]
            if isinstance(right, dict) and "set" in right:
                right = tuple(sorted(right["set"], key=str))
            found[key] = right
        elif "accept" in expr or "drop" in expr:
            verdict = "accept" if "accept" in expr else "drop"
        elif "reject" in expr:
            verdict = "reject"
    return found, verdict


def firewall_live_problems(nft_json, plan, table="gb10_serving"):
    """What the live table (``nft --json list table inet TABLE``) lacks of the plan."""
    try:
        items = json.loads(nft_json)["nftables"] if isinstance(nft_json, str) else nft_json
    except (ValueError, KeyError, TypeError):
        return [f"`nft --json list table inet {table}` gave no table: the rules are not loaded."]
    sets, rules, hooked = {}, [], False
    for item in items:
        if "set" in item:
            sets[item["set"]["name"]] = {_element(e) for e in item["set"].get("elem", [])}
        elif "chain" in item:
            hooked = hooked or item["chain"].get("hook") == "input"
        elif "rule" in item:
            rules.append(_matches(item["rule"]))
    problems = []
    if not hooked:
        problems.append(f"Table {table} has no chain on the input hook.")
    for family, name in (("api_cidrs_v4", "api_v4"), ("api_cidrs_v6", "api_v6")):
        want = set(plan.get(family, []))
        if sets.get(name, set()) != want:
            problems.append(
                f"Set {name} holds {sorted(sets.get(name, set()))}, the plan {sorted(want)}."
            )
    rails = plan.get("rails") or [
        {"interface": plan.get("fabric_interface"), "peer_ipv4s": plan.get("peer_ipv4s", [])}
    ]
    for rail in rails:
        interface = rail["interface"]
        # One peer is a plain value in the rule, several a set (more than two nodes).
        admitted = set()
        for found, verdict in rules:
            if verdict == "accept" and set(found) == {("meta", "iifname"), ("ip", "saddr")}:
                if found[("meta", "iifname")] == interface:
                    saddr = found[("ip", "saddr")]
                    admitted.update(saddr if isinstance(saddr, tuple) else (saddr,))
        for peer in rail["peer_ipv4s"]:
            if peer not in admitted:
                problems.append(f"No rule accepts the peer {peer} on {interface}.")
    port = plan.get("api_port")
    if ({("tcp", "dport"): port}, "reject") not in rules:
        problems.append(f"No rule refuses the API port {port} to everyone else.")
    engine = plan.get("engine_ports", [])
    engine_key = tuple(sorted(engine, key=str)) if len(engine) > 1 else (engine or [None])[0]
    if ({("tcp", "dport"): engine_key}, "reject") not in rules:
        problems.append(f"No rule refuses the engine's ports {engine} off the fabric link.")
    return problems
