"""The serve command's flags: listed in --help, their defaults, and refusals before anything loads."""

from __future__ import annotations

import pytest

from gateway import cli
from gateway.cli_args import build_parser

NEW_FLAGS = ("--api-key KEY", "--api-key-file", "--protect-metrics", "--ssl-keyfile", "--ssl-certfile",
             "--ssl-ca-certs", "--ssl-cert-reqs", "--profiler-dir", "--embedding-model",
             "--embedding-num-threads", "--embedding-max-batch-tokens", "--tool-parser NAME|auto|none",
             "--reasoning-parser NAME|auto|none", "--enforce-eager", "--gpu-memory-utilization",
             "--speculative {ngram,draft,tli}", "--draft-model PATH",
             "--num-speculative-tokens K|auto", "--idle-connection-timeout")  # fmt: skip


def _serve_help() -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices["serve"].format_help()


def test_help_lists_every_flag():
    text = _serve_help()
    for flag in NEW_FLAGS:
        assert flag in text, flag


def test_defaults():
    args = build_parser().parse_args(["serve"])
    assert (args.tool_parser, args.reasoning_parser) == ("auto", "auto")
    assert args.embedding_model is None and args.ssl_cert_reqs == "none" and args.api_key is None
    assert args.enforce_eager is False and args.gpu_memory_utilization == 0.9
    config = cli._engine_config(build_parser().parse_args(["serve", "--enforce-eager", "--gpu-memory-utilization", "0.5"]))
    assert config.enforce_eager and config.gpu_memory_utilization == 0.5
    args = build_parser().parse_args(["serve", "--api-key", "a", "--api-key", "b"])
    assert args.api_key == ["a", "b"]


@pytest.mark.parametrize("argv, message", [
    (["--ssl-keyfile", "k.pem"], "--ssl-keyfile and --ssl-certfile go together"),
    (["--ssl-cert-reqs", "required"], "need --ssl-certfile"),
    (["--ssl-cert-reqs", "sometimes"], "--ssl-cert-reqs must be"),
    (["--ssl-keyfile", "/no.key", "--ssl-certfile", "/no.pem"], "cannot load"),
    (["--data-parallel-size", "0"], "--data-parallel-size"),
    (["--gpu-memory-utilization", "1.5"], "gpu_memory_utilization"),
    (["--tool-parser", "auto", "--embedding-max-batch-tokens", "0"], "max_batch_tokens"),
    (["--num-speculative-tokens", "0", "--speculative", "ngram"], "num_speculative_tokens must be in [1, 64]"),
    (["--draft-model", "/x"], "draft_model needs speculative 'draft' or 'tli'"),
    (["--idle-connection-timeout", "0"], "--idle-connection-timeout must be > 0"),
    (["--ray-address", "auto"], "--ray-address needs --data-parallel-backend ray"),
    (["--min-replicas", "3"], "must lie within --min-replicas and --max-replicas"),
    (["--max-replicas", "0"], "--max-replicas must be >= 1"),
    (["--max-replicas", "4", "--scale-up-wait-s", "0"], "--scale-up-wait-s and --scale-down-idle-s must be > 0"),
    (["--routing-load-margin", "-1"], "--routing-load-margin must be >= 0"),
])  # fmt: skip
def test_bad_flags_exit_2_before_loading(argv, message, capsys):
    assert cli.main(["serve", *argv]) == 2
    assert message in capsys.readouterr().err


def test_embedding_model_choice(monkeypatch):
    import engine.embedding

    parse = build_parser().parse_args
    assert cli._embedding_config(parse(["serve", "--embedding-model", "none"])) is None
    monkeypatch.setattr(engine.embedding, "default_embedding_installed", lambda: False)
    assert cli._embedding_config(parse(["serve"])) is None  # unset and not installed: off
    config = cli._embedding_config(parse(["serve", "--embedding-model", "default"]))
    assert config is not None and config.model is None  # asked for: a missing package fails at startup
    monkeypatch.setattr(engine.embedding, "default_embedding_installed", lambda: True)
    assert cli._embedding_config(parse(["serve"])).model is None
    assert cli._embedding_config(parse(["serve", "--embedding-model", "/x"])).model == "/x"


@pytest.mark.parametrize("argv, message", [
    (["--speculative", "medusa"], "invalid choice: 'medusa'"),
    (["--num-speculative-tokens", "many"], "expected an integer or auto, got 'many'"),
])  # fmt: skip
def test_bad_speculative_values_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["serve", *argv])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_speculative_flags_reach_the_engine_config():
    parse = build_parser().parse_args
    config = cli._engine_config(parse(["serve"]))
    assert (config.speculative, config.draft_model, config.num_speculative_tokens) == (None, None, None)
    argv = ["serve", "--speculative", "tli", "--draft-model", "/d", "--num-speculative-tokens", "5"]
    config = cli._engine_config(parse(argv))
    assert (config.speculative, config.draft_model, config.num_speculative_tokens) == ("tli", "/d", 5)
    config = cli._engine_config(parse(["serve", "--speculative", "ngram", "--num-speculative-tokens", "auto"]))
    assert config.num_speculative_tokens is None  # auto: dynamic


def test_scale_out_flags():
    parse = build_parser().parse_args
    args = parse(["serve", "--data-parallel-size", "2", "--max-replicas", "6", "--routing", "least-loaded",
                  "--block-size", "32"])  # fmt: skip
    routing, scaling = cli._scale_out(args, cli._engine_config(args))
    assert (routing.policy, routing.block_size, routing.load_margin_tokens) == ("least-loaded", 32, 2048)
    assert (scaling.min_replicas, scaling.max_replicas, scaling.scale_up_wait_s) == (2, 6, 2.0)
    args = parse(["serve"])
    routing, scaling = cli._scale_out(args, cli._engine_config(args))
    assert routing.policy == "prefix" and scaling is None  # one replica, no autoscaling
    ray_args = parse(["serve", "--data-parallel-backend", "ray"])
    assert cli._engine_config(ray_args).num_threads == 1  # one Ray CPU per replica unless --num-threads
