"""SMART and NVMe health: exec layer, parsers (smartctl JSON, pySMART text, nvme-cli), verdict."""
