"""diskprobe_fs: df's view of every mount, plus the fill-rate forecast."""

from __future__ import annotations

from diskprobe.schema.types import MeasurementSpec, TagSpec
from diskprobe.schema.types import field_spec as _f

FS = MeasurementSpec(
    name="diskprobe_fs",
    description=(
        "Per mounted filesystem, the numbers `df -B1` and `df -i` print (one statvfs), "
        "and how fast it fills. A mount whose statfs did not answer within `stat_timeout` "
        "carries only `responsive=false` and `unresponsive_sec`."
    ),
    tags=(
        TagSpec("path", "Mount point on the host (HOST_MOUNT_PREFIX removed)."),
        TagSpec(
            "device", "Mount source with `/dev/` removed (vda1, mapper/vg-root, server:/export)."
        ),
        TagSpec("fstype", "Filesystem type (ext4, xfs, btrfs, nfs4, fuse.sshfs, ...)."),
        TagSpec("mode", "`rw` or `ro`, from the mount options."),
    ),
    fields=(
        _f(
            "total_bytes", "int", "B", "Size of the filesystem (f_blocks x f_frsize; df 1B-blocks)."
        ),
        _f("used_bytes", "int", "B", "Used space (total - free; df Used)."),
        _f("free_bytes", "int", "B", "Free space including root's reserve (f_bfree x f_frsize)."),
        _f(
            "avail_bytes",
            "int",
            "B",
            "Space an unprivileged user can still write (f_bavail x f_frsize; df Avail).",
        ),
        _f(
            "used_percent",
            "float",
            "%",
            "used / (used + avail) x 100, df's Use% before rounding: 100 once users can write no more.",
        ),
        _f("inodes_total", "int", "inodes", "Inodes in the filesystem (f_files; df -i Inodes)."),
        _f("inodes_used", "int", "inodes", "Inodes in use (f_files - f_ffree; df -i IUsed)."),
        _f("inodes_free", "int", "inodes", "Free inodes (f_ffree; df -i IFree)."),
        _f(
            "inodes_used_percent",
            "float",
            "%",
            "inodes_used / inodes_total x 100; omitted where the filesystem reports no inodes (btrfs).",
        ),
        _f(
            "responsive",
            "bool",
            "",
            "false when statfs did not answer within stat_timeout (hung NFS/FUSE); then no other field is sent but unresponsive_sec.",
        ),
        _f(
            "unresponsive_sec",
            "int",
            "s",
            "Only with responsive=false: seconds since diskprobe first found the mount not answering (0 on that point). Kept in the state file: a restart continues the count; a mount that answered or was unmounted in between starts at 0.",
        ),
        _f(
            "fill_rate_bytes_per_sec",
            "float",
            "B/s",
            "Net growth of used space over the forecast window (upper-envelope fit); 0.0 when flat; sent once the window has forecast_min_samples.",
        ),
        _f(
            "time_to_full_sec",
            "float",
            "s",
            "Seconds until avail_bytes reaches 0 at the current net rate; only while filling with a trustworthy fit, and under 10 years.",
        ),
        _f(
            "inodes_time_to_full_sec",
            "float",
            "s",
            "Seconds until inodes_free reaches 0 at the current net rate; same conditions.",
        ),
    ),
    series_tags=("path",),
)
