//! What the operating system says about a mirror process: CPU seconds, peak RSS, and the TCP
//! sockets it holds, grouped by the broker (remote port) they lead to.

use std::collections::{BTreeMap, HashMap};

use anyhow::Context;

/// CPU seconds (user + system, all threads) and peak resident set size (`VmHWM`) in MiB.
pub fn cpu_and_rss(pid: u32) -> anyhow::Result<(f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .context("stat format")?
        .1
        .split_whitespace()
        .collect();
    // utime and stime, in clock ticks of 100 Hz (USER_HZ on Linux).
    let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let hwm_kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .context("VmHWM")?
        .parse()?;
    Ok((ticks / 100.0, hwm_kb / 1024.0))
}

/// Which broker a remote port belongs to, e.g. `source b1` or `target b2`.
#[derive(Debug, Clone, Default)]
pub struct Ports {
    labels: HashMap<u16, String>,
}

impl Ports {
    /// Names `port` (of `host:port` or a bare port) as `label`.
    pub fn add(&mut self, address: &str, label: &str) {
        let port = address.rsplit_once(':').map_or(address, |(_, p)| p);
        if let Ok(port) = port.parse() {
            self.labels.insert(port, label.to_owned());
        }
    }

    fn label(&self, port: u16) -> String {
        self.labels.get(&port).cloned().unwrap_or_else(|| "other".into())
    }
}

/// One look at a process's open files.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Open TCP connections per broker label (`other` for unknown ports); listening sockets are
    /// not counted.
    pub sockets: BTreeMap<String, usize>,
    /// Open files of any kind (entries of `/proc/<pid>/fd`).
    pub open_files: usize,
}

/// The open files of a process, and its TCP connections per broker, as the test kit's
/// [`strait_testkit::tcp_connections`] counts them.
pub fn sample(pid: u32, ports: &Ports) -> anyhow::Result<Sample> {
    let open_files = std::fs::read_dir(format!("/proc/{pid}/fd"))?.count();
    let mut sockets = BTreeMap::new();
    for (port, count) in strait_testkit::tcp_connections(pid)? {
        *sockets.entry(ports.label(port)).or_insert(0) += count;
    }
    Ok(Sample { sockets, open_files })
}

/// The soft limit on open files of a process (`Max open files` in `/proc/<pid>/limits`).
pub fn open_file_limit(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/limits"))
        .ok()?
        .lines()
        .find(|l| l.starts_with("Max open files"))?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()
}

/// The peak of each label's count over the samples, and the peak of their total.
#[derive(Debug, Clone, Default)]
pub struct SocketPeaks {
    /// Highest count seen per label.
    pub by_label: BTreeMap<String, usize>,
    /// Highest total seen in one sample.
    pub total: usize,
    /// Most open files of any kind in one sample.
    pub open_files: usize,
}

impl SocketPeaks {
    /// Takes one sample into account.
    pub fn add(&mut self, sample: &Sample) {
        self.open_files = self.open_files.max(sample.open_files);
        let mut total = 0;
        for (label, &count) in &sample.sockets {
            let peak = self.by_label.entry(label.clone()).or_insert(0);
            *peak = (*peak).max(count);
            total += count;
        }
        self.total = self.total.max(total);
    }

    /// `source 16 · target 18`, with the brokers of a cluster of several in brackets.
    pub fn summary(&self) -> String {
        let mut clusters: BTreeMap<&str, Vec<(&str, usize)>> = BTreeMap::new();
        for (label, &count) in &self.by_label {
            let (cluster, broker) = label.split_once(' ').unwrap_or((label.as_str(), ""));
            clusters.entry(cluster).or_default().push((broker, count));
        }
        let mut parts = Vec::new();
        // Source first, then target, then anything else.
        let mut names: Vec<&str> = clusters.keys().copied().collect();
        names.sort_by_key(|n| match *n {
            "source" => 0,
            "target" => 1,
            _ => 2,
        });
        for name in names {
            let brokers = &clusters[name];
            let sum: usize = brokers.iter().map(|(_, c)| c).sum();
            if brokers.len() > 1 {
                let detail: Vec<String> = brokers.iter().map(|(b, c)| format!("{b} {c}")).collect();
                parts.push(format!("{name} {sum} ({})", detail.join(", ")));
            } else {
                parts.push(format!("{name} {sum}"));
            }
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(" · ")
        }
    }
}

/// The read-ahead of each block device in KiB (`/sys/block/*/queue/read_ahead_kb`), for the
/// report: a broker's first touch of a fresh partition's memory-mapped index reads this much,
/// so a large value (8 MiB on some cloud images) makes topics with thousands of partitions slow
/// to start for every mirror, and the wide cases measure the disk instead of the mirrors.
pub fn read_ahead_kb() -> Vec<(String, u64)> {
    let Ok(devices) = std::fs::read_dir("/sys/block") else {
        return vec![];
    };
    let mut found: Vec<(String, u64)> = devices
        .filter_map(Result::ok)
        .filter_map(|device| {
            let name = device.file_name().to_string_lossy().into_owned();
            let path = device.path().join("queue/read_ahead_kb");
            let kb = std::fs::read_to_string(path).ok()?.trim().parse().ok()?;
            (!name.starts_with("loop") && !name.starts_with("ram")).then_some((name, kb))
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_sockets_are_found_by_remote_port() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let _a = std::net::TcpStream::connect(&address).unwrap();
        let _b = std::net::TcpStream::connect(&address).unwrap();
        let mut ports = Ports::default();
        ports.add(&address, "target b1");
        let sample = sample(std::process::id(), &ports).unwrap();
        assert!(sample.open_files >= 3, "{sample:?}");
        let counts = &sample.sockets;
        // Two client sockets to the port; the two accepted ends have that port as their local
        // port and a random remote one.
        assert_eq!(counts.get("target b1"), Some(&2), "{counts:?}");
        let mut peaks = SocketPeaks::default();
        peaks.add(&sample);
        assert!(peaks.summary().contains("target 2"), "{}", peaks.summary());
    }
}
