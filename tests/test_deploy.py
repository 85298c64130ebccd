"""deploy/: the KubeRay manifest's gateway command is one the CLI accepts, and its probes hit /health on
the port that command serves."""

from __future__ import annotations

from pathlib import Path

import yaml

from gateway import cli
from gateway.cli_args import build_parser

MANIFEST = Path(__file__).resolve().parent.parent / "deploy" / "kuberay" / "raycluster.yaml"


def _head_containers() -> list[dict]:
    docs = [doc for doc in yaml.safe_load_all(MANIFEST.read_text()) if doc]
    (cluster,) = [doc for doc in docs if doc["kind"] == "RayCluster"]
    return cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"]


def test_the_gateway_command_parses_with_the_clis_parser(tmp_path):
    (gateway,) = [c for c in _head_containers() if c["name"] == "gateway"]
    command = gateway["command"]
    assert command[:3] == ["python", "-m", "gateway"]
    args = build_parser().parse_args(command[3:])
    assert args.command == "serve" and args.data_parallel_backend == "ray"
    assert args.ray_address == "127.0.0.1:6379" and args.host == "0.0.0.0"
    keys = tmp_path / "keys"  # the mounted secret's stand-in
    keys.write_text("a-key\n")
    args.api_key_file = str(keys)
    cli._settings(args)  # the CLI's own checks of the flags (ValueError naming a flag otherwise)
    config = cli._engine_config(args)
    routing, scaling = cli._scale_out(args, config)
    assert routing.policy == "prefix" and scaling.min_replicas == 2 and scaling.max_replicas == 8
    for probe in ("readinessProbe", "livenessProbe"):
        assert gateway[probe]["httpGet"] == {"path": "/health", "port": args.port}
    assert {"containerPort": args.port, "name": "http"} in gateway["ports"]
