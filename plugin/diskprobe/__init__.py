"""diskprobe: disk I/O, filesystem and SMART health probe for Telegraf and collectd."""

__version__ = "0.1.0"
