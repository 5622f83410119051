"""The I/O dashboard's two process tables, side by side: who moves the bytes and who waits.

diskprobe_process_io reports the top processes by bytes and, with delay accounting on, the
top processes by time blocked on block I/O (blkio_wait_ratio). The two rankings differ where
it matters: a process doing slow random 4 KiB reads moves few bytes and waits the most.
"""

from __future__ import annotations

from dashgen.build import agg, tags
from dashgen.model import Column, Panel, Target
from dashgen.query import Select
from dashgen.refs import PROCESS_IO, quote, same_unit

BY = ("host", "process", "user")  # one series per process name and user (PIDs are fields)


def top_processes() -> Panel:
    f = PROCESS_IO.f
    read, write = f("read_bytes_per_sec"), f("write_bytes_per_sec")
    unit = same_unit(read, write)
    cells = ((read, "read"), (write, "write"), (f("pid"), "PID"), (f("cmdline"), "command line"),
             (f("cgroup"), "cgroup"))
    select = Select(
        columns=", ".join(
            [f"last({read}) + last({write}) AS {quote('total_bytes_per_sec')}"]
            + [agg("last", field) for field, _ in cells]
        ),
        measurement=PROCESS_IO.name,
        filters=tags(PROCESS_IO, "host"),
        group_tags=tags(PROCESS_IO, *BY),
    )
    columns = (Column("total_bytes_per_sec", unit, "read + write"),
               *(Column(field.name, field.unit, title) for field, title in cells))
    return Panel(
        title="Top processes by storage I/O",
        description=(
            f"The processes {PROCESS_IO.name} reported (the iotop view: bytes that reached "
            "the block layer, above min_bytes_per_sec), with their last values in the time "
            "range, busiest first. A process that stopped doing I/O keeps its last rate here; "
            "narrow the time range to see who is busy now."
        ),
        kind="table",
        targets=(Target(select, unit),),
        width=12,
        height=9,
        columns=columns,
        sort_by="total_bytes_per_sec",
        sort_desc=True,
    )


def who_waits() -> Panel:
    """Each process's last point that carried a wait: one selector beside plain fields
    returns that one point (its rates, pid and command line, and its time as the row's)."""
    f = PROCESS_IO.f
    wait = f("blkio_wait_ratio")
    cells = ((f("read_bytes_per_sec"), "read"), (f("write_bytes_per_sec"), "write"),
             (f("pid"), "PID"), (f("cmdline"), "command line"), (f("cgroup"), "cgroup"))
    select = Select(
        columns=", ".join([agg("last", wait)]
                          + [f"{field} AS {quote(field.name)}" for field, _ in cells]),
        measurement=PROCESS_IO.name,
        filters=tags(PROCESS_IO, "host"),
        group_tags=tags(PROCESS_IO, *BY),
    )
    # No Grafana unit for seconds per second: the title carries it.
    columns = (Column(wait.name, wait.unit, "blocked on I/O (s/s)"),
               *(Column(field.name, field.unit, title) for field, title in cells))
    return Panel(
        title="Who waits on disk",
        description=(
            f"The processes by their last {wait.name}: seconds their threads spent blocked on "
            "block I/O per second (1 is one thread waiting all the time; threads and "
            "same-name processes add up), with that point's rates, PID, command line and "
            "cgroup, longest waiting first. Needs the kernel's delay accounting: sysctl "
            "kernel.task_delayacct=1 (or delayacct on the kernel command line); without it "
            "the table is empty. A process doing slow random 4 KiB reads waits most while "
            "moving few bytes, so it can top this table and be missing from the one by bytes."
        ),
        kind="table",
        targets=(Target(select, wait.unit),),
        width=12,
        height=9,
        columns=columns,
        sort_by=wait.name,
        sort_desc=True,
    )
