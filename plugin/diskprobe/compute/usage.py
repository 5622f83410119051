"""df's numbers from one statvfs result (coreutils df.c get_dev, `df -B1` and `df -i`)."""

from __future__ import annotations

import os

from diskprobe.metric import FieldValue


def usage_fields(stat: os.statvfs_result) -> dict[str, FieldValue]:
    """Space and inode fields; percentages only where df would print one."""
    block = stat.f_frsize or stat.f_bsize
    total = stat.f_blocks * block
    free = stat.f_bfree * block
    avail = stat.f_bavail * block
    used = total - free
    fields: dict[str, FieldValue] = {
        "total_bytes": total,
        "used_bytes": used,
        "free_bytes": free,
        "avail_bytes": avail,
    }
    # df: used / (used + avail), so 100 % once users can write no more, root's reserve aside.
    if used + avail > 0:
        fields["used_percent"] = used * 100.0 / (used + avail)
    inodes_used = stat.f_files - stat.f_ffree
    fields["inodes_total"] = stat.f_files
    fields["inodes_used"] = inodes_used
    fields["inodes_free"] = stat.f_ffree
    if stat.f_files > 0:  # btrfs and some network filesystems report no inode counts
        fields["inodes_used_percent"] = inodes_used * 100.0 / stat.f_files
    return fields
