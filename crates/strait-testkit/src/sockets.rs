//! The TCP connections a process holds, as the operating system sees them: what a test or a
//! benchmark counts instead of trusting the process's own metrics.

use std::collections::{BTreeMap, HashSet};

/// The TCP connections of process `pid`, counted by remote port (one port per broker listener).
/// Listening sockets are left out. A process's sockets are its `/proc/<pid>/fd` entries
/// `socket:[inode]`, found by inode in its `/proc/<pid>/net/tcp` and `tcp6`.
pub fn tcp_connections(pid: u32) -> std::io::Result<BTreeMap<u16, usize>> {
    let mut inodes = HashSet::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        // An fd closed between listing and reading is simply gone.
        let Ok(target) = entry.and_then(|e| std::fs::read_link(e.path())) else {
            continue;
        };
        let target = target.to_string_lossy();
        if let Some(inode) = target.strip_prefix("socket:[").and_then(|t| t.strip_suffix(']')) {
            if let Ok(inode) = inode.parse::<u64>() {
                inodes.insert(inode);
            }
        }
    }
    let mut counts = BTreeMap::new();
    for table in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st … inode; state 0A is LISTEN.
            if fields.len() < 10 || fields[3] == "0A" {
                continue;
            }
            let Ok(inode) = fields[9].parse::<u64>() else { continue };
            if inode == 0 || !inodes.contains(&inode) {
                continue;
            }
            if let Some(port) = fields[2]
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
            {
                *counts.entry(port).or_insert(0) += 1;
            }
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_this_processs_connections_by_remote_port() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let before = tcp_connections(std::process::id())
            .unwrap()
            .get(&port)
            .copied()
            .unwrap_or(0);
        let clients: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        let during = tcp_connections(std::process::id()).unwrap();
        assert_eq!(during.get(&port).copied().unwrap_or(0), before + 3, "{during:?}");
        drop(clients);
    }
}
