"""Connecting to Ray with a bounded wait: `ray.init` on an address where no cluster answers retries
for minutes, so a wrong `--address` must fail in seconds with a one-line error instead."""

from __future__ import annotations

import socket
import threading

from llmopt.errors import one_line

CONNECT_SECONDS = 5.0  # TCP reachability of the address
INIT_SECONDS = 120.0  # ray.init itself (starting a local Ray takes ~10 s on the 2-core machine)


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of "host:port" or "ray://host:port"; None for "auto", "local" and the like."""
    text = address.split("://", 1)[-1]
    host, sep, port = text.rpartition(":")
    return (host.strip("[]"), int(port)) if sep and port.isdigit() else None


def check_reachable(address: str, timeout: float = CONNECT_SECONDS) -> None:
    from data_pipeline.job import JobError

    target = _host_port(address)
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=timeout).close()
    except OSError as err:
        raise JobError(f"cannot reach a Ray cluster at {address}: {err.strerror or err} (start one with "
                       "`ray start --head`, or leave out --address for a local Ray)") from None


def connect_ray(cfg, timeout: float = INIT_SECONDS) -> None:
    """ray.init for the job's --address (default: a local Ray), or a JobError within `timeout` seconds."""
    from data_pipeline.job import JobError

    try:
        import ray
    except ImportError:
        raise JobError('--executor ray needs Ray: pip install "ray[default]"') from None
    if ray.is_initialized():
        return
    if cfg.address:
        check_reachable(cfg.address)
    failure: list[BaseException] = []

    def init() -> None:
        try:
            ray.init(address=cfg.address, ignore_reinit_error=True, log_to_driver=False)
        except BaseException as err:  # noqa: BLE001 - reported by the caller
            failure.append(err)

    thread = threading.Thread(target=init, daemon=True)  # a hung ray.init must not hang the job
    thread.start()
    thread.join(timeout)
    where = cfg.address or "a local Ray"
    if thread.is_alive():
        raise JobError(f"Ray did not start or connect to {where} within {timeout:g}s")
    if failure:
        raise JobError(f"cannot connect to {where}: {one_line(failure[0])}")
