"""Mount tables from real hosts and containers (corpus files under tests/fixtures/)."""

from __future__ import annotations

from diskprobe.compute.mount_selection import MountTarget, select_mounts
from diskprobe.config import PSEUDO_FILESYSTEMS
from diskprobe.roots import HostRoots
from diskprobe.sources.mountinfo import Mount, parse_mountinfo_line, read_mountinfo, unescape

from helpers import FIXTURES


def _mounts(env: str) -> list[Mount]:
    return read_mountinfo(HostRoots(proc=str(FIXTURES / env / "proc")))


def _select(env: str, **options: object) -> dict[str, MountTarget]:
    options.setdefault("ignore_fs", PSEUDO_FILESYSTEMS)
    targets = select_mounts(_mounts(env), **options)  # type: ignore[arg-type]
    return {target.path: target for target in targets}


def test_octal_escapes_in_mount_points_and_sources() -> None:
    mounts = _mounts("mountinfo_escapes")
    assert [m.mount_point for m in mounts] == [
        "/mnt/foo bar",
        "/DATA/foo_bla_bla",
        "/tmp/newline\ntab\tspace backslash\\quote1'quote2\"",
    ]
    assert mounts[1].source == "//foo/BLA BLA BLA/" and mounts[1].fstype == "cifs"
    assert mounts[2].root == mounts[2].mount_point  # last line has no trailing newline


def test_kubelet_volume_paths_with_space_and_tab() -> None:
    points = [m.mount_point for m in _mounts("mountinfo_escapes_kubelet")]
    assert any("[vsanDatastore] bafb9e5a" in p for p in points)
    assert any("[vsanDatastore]\tbafb9e5a" in p for p in points)


def test_raw_carriage_return_stays_in_the_mount_point() -> None:
    points = [m.mount_point for m in _mounts("mountinfo_libmount_cr")]
    assert "/mnt/test/foo\rbar" in points
    assert len(points) == 33  # 34 lines, one of them split by the raw \r inside a path


def test_empty_source_field() -> None:
    mount = parse_mountinfo_line("19 17 0:16 / /dev/shm rw,relatime - tmpfs  rw")
    assert mount is not None and mount.source == "" and mount.fstype == "tmpfs"


def test_doubled_space_between_fields() -> None:
    mounts = _mounts("mountinfo_nfs_dupes")
    assert mounts[0].root == "/" and mounts[0].mount_point == "/root"


def test_over_mounted_path_reports_only_the_top_mount() -> None:
    # /mnt/nfs/test: nfs4 0:42 twice, then nfs v3 0:44 mounted over it (visible one).
    selected = _select("mountinfo_nfs_dupes")
    assert selected["/mnt/nfs/test"].fstype == "nfs"
    assert selected["/mnt/nfs/test"].device == "192.168.1.1:/srv/test"
    assert set(selected) == {"/", "/mnt/nfs/test", "/root", "/var/lib/containers/storage/overlay"}


def test_bind_mounts_reported_once_under_the_shortest_path_unless_asked() -> None:
    # The same ext4 (8:1, root "/") is at "/" and, bind-mounted, nowhere else here; the
    # overlay storage dir is the same xfs tree seen at one path: build a bind case explicitly.
    lines = [
        "21 0 8:1 / / rw,relatime - ext4 /dev/sda1 rw",
        "30 21 8:1 / /host rw,relatime - ext4 /dev/sda1 rw",
        "31 21 8:1 /srv /srv rw,relatime - ext4 /dev/sda1 rw",
        "32 21 8:1 /srv /var/www/srv ro,relatime - ext4 /dev/sda1 rw",
    ]
    mounts = [m for m in map(parse_mountinfo_line, lines) if m]
    deduped = select_mounts(mounts, ignore_fs=[])
    assert [(t.path, t.mode) for t in deduped] == [("/", "rw"), ("/srv", "rw")]
    everything = select_mounts(mounts, ignore_fs=[], report_bind_mounts=True)
    assert [t.path for t in everything] == ["/", "/host", "/srv", "/var/www/srv"]
    assert everything[-1].mode == "ro"


def test_btrfs_subvolumes_are_distinct_trees() -> None:
    selected = _select("btrfs_subvolumes")
    assert {"/", "/mnt/a", "/var/lib/containers", "/var/tmp"} <= set(selected)
    assert selected["/"].device == "sdc1" and selected["/"].fstype == "btrfs"


def test_container_falls_back_to_self_mountinfo_when_pid_1_is_hidden() -> None:
    mounts = _mounts("container_hidepid")
    assert [m.mount_point for m in mounts] == ["/"]


def test_docker_container_view_skips_overlay_and_pseudo_filesystems() -> None:
    selected = _select("docker_cgroupv2")
    # resolv.conf, hostname and hosts are files bind-mounted from one ext4 tree each.
    assert set(selected) == {"/etc/hostname", "/etc/hosts", "/etc/resolv.conf"}


def test_host_mount_prefix_is_prepended_for_statfs_and_stripped_from_paths() -> None:
    selected = _select("container_host_bind", prefix="/host")
    assert selected["/"].stat_path == "/host" and selected["/"].device == "nvme1n0"
    assert selected["/media/volume1"].stat_path == "/host/media/volume1"
    host_view = _select("btrfs_subvolumes", prefix="/hostfs")
    assert host_view["/var/tmp"].stat_path == "/hostfs/var/tmp"


def test_filters_exact_paths_globs_and_types() -> None:
    wanted = _select("gentoo_large", mount_points=["/", "/home*"])
    assert sorted(wanted) == ["/", "/home/tianon/.gvfs"]
    assert wanted["/home/tianon/.gvfs"].fstype == "fuse.gvfs-fuse-daemon"
    assert sorted(_select("gentoo_large", mount_points=["/", "/home*"],
                          ignore_mount_points=["/home/*/.gvfs"])) == ["/"]  # fmt: skip
    assert _select("btrfs_subvolumes", ignore_fs=["btrfs", *PSEUDO_FILESYSTEMS]) == {}


def test_every_corpus_table_parses_every_line() -> None:
    for env in (
        "mountinfo_escapes", "mountinfo_escapes_kubelet", "mountinfo_empty_source",
        "mountinfo_nfs_dupes", "container_host_bind", "btrfs_subvolumes", "gentoo_large",
        "docker_cgroupv2", "nspawn_container",
    ):  # fmt: skip
        path = next((FIXTURES / env / "proc").glob("*/mountinfo"))
        lines = [line for line in path.read_text().split("\n") if line.strip()]
        assert len(_mounts(env)) == len(lines), env


def test_unescape_leaves_other_backslashes() -> None:
    assert unescape(r"unc=\\foo\bar\040x") == "unc=\\\\foo\\bar x"
