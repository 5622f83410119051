"""Many hosts, one database (issue 28, part 4): what the fleet's senders offer, the benchmark
that measures it, and the Telegraf [agent] settings shipped for large fleets.

The model (tests/bench/fleet_drain_model.py) runs the sender's own pacing functions; its
figures are computed, not timed, so they can be asserted. The benchmark runs in --quick mode
only to show it works (its figures are in docs/fleet.md, never asserted).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from diskprobe.config import AgentConfig, OutputConfig
from diskprobe.durations import parse_duration

sys.path.insert(0, str(Path(__file__).parent / "bench"))
from fleet_drain_model import drain, steady

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "tests" / "bench" / "bench_fleet_drain.py"
FLEET_AGENT = ROOT / "telegraf" / "fleet-agent.conf"
HOSTS, BATCH, INTERVAL = 10_000, 16_384, 10.0
BACKLOG = 64 * BATCH  # about 11 minutes of this host's batches


def test_a_fleet_back_at_once_offers_the_database_a_bounded_multiple_of_its_own_load() -> None:
    defaults = OutputConfig()
    stampede = drain(HOSTS, BACKLOG, BATCH, INTERVAL, 0.0, defaults.send_jitter, 0.0)
    paced = drain(HOSTS, BACKLOG, BATCH, INTERVAL, defaults.drain_speedup,
                  defaults.send_jitter, 0.0)  # fmt: skip
    own_load = HOSTS * BATCH / INTERVAL
    # every byte of every backlog is offered, once
    assert sum(stampede.bytes_per_second) == sum(paced.bytes_per_second) == HOSTS * BACKLOG
    # as fast as the server answers: the whole backlog within the send jitter
    assert stampede.seconds <= defaults.send_jitter + 1
    assert stampede.peak_bytes_per_second > 25 * own_load
    # paced: the first requests land within the jitter, then drain_speedup x the own load
    assert paced.peak_bytes_per_second < stampede.peak_bytes_per_second / 4
    steady_part = paced.bytes_per_second[int(defaults.send_jitter) + 2 : -3]
    assert steady_part and max(steady_part) < 1.3 * defaults.drain_speedup * own_load
    # and an outage drains in about its length over drain_speedup (64 batches of 10 s)
    outage = BACKLOG / BATCH * INTERVAL
    assert outage / defaults.drain_speedup <= paced.seconds <= outage / 2


def test_send_jitter_spreads_an_aligned_fleets_writes() -> None:
    aligned = steady(HOSTS, BATCH, INTERVAL, 0.0)
    jittered = steady(HOSTS, BATCH, INTERVAL, OutputConfig().send_jitter)
    assert aligned.peak_requests_per_second == HOSTS  # every host in the same instant
    assert jittered.peak_requests_per_second < HOSTS / OutputConfig().send_jitter * 1.15


def test_the_benchmark_runs_real_senders_against_victoriametrics() -> None:
    result = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True,
                            text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    measured = re.findall(r"^measured, drain_speedup=(\S+): peak ([\d,]+) samples/s", result.stdout,
                          re.M)  # fmt: skip
    assert [speedup for speedup, _ in measured] == ["0", "4"], result.stdout
    assert all(int(peak.replace(",", "")) > 0 for _, peak in measured), result.stdout
    assert "hosts back at once" in result.stdout and "steady" in result.stdout


def test_the_fleet_agent_settings_agree_with_diskprobe_and_telegrafs_rules() -> None:
    agent = tomllib.loads(FLEET_AGENT.read_text())["agent"]
    assert parse_duration(agent["interval"]) == AgentConfig().interval
    assert agent["round_interval"] is True and parse_duration(agent["collection_jitter"]) == 0
    flush, jitter = parse_duration(agent["flush_interval"]), parse_duration(agent["flush_jitter"])
    assert flush >= parse_duration(agent["interval"]) and 0 < jitter <= flush
    # Telegraf: the buffer holds at least two batches
    assert agent["metric_buffer_limit"] >= 2 * agent["metric_batch_size"]
