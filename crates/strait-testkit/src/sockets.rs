//! The TCP connections a process holds, as the operating system sees them: what a test or a
//! benchmark counts instead of trusting the process's own metrics.

use std::collections::{BTreeMap, BTreeSet, HashSet};

/// The TCP connections of process `pid`, counted by remote port (one port per broker listener).
/// Listening sockets are left out.
pub fn tcp_connections(pid: u32) -> std::io::Result<BTreeMap<u16, usize>> {
    let mut counts = BTreeMap::new();
    for (_, port) in sockets(pid)? {
        *counts.entry(port).or_insert(0) += 1;
    }
    Ok(counts)
}

/// The TCP connections of process `pid` to remote port `port`, by socket inode: a connection
/// closed and opened again has a new inode, so two calls tell whether connections survived.
pub fn tcp_sockets_to(pid: u32, port: u16) -> std::io::Result<BTreeSet<u64>> {
    Ok(sockets(pid)?
        .into_iter()
        .filter(|&(_, p)| p == port)
        .map(|(inode, _)| inode)
        .collect())
}

/// A process's connected TCP sockets as (inode, remote port). A process's sockets are its
/// `/proc/<pid>/fd` entries `socket:[inode]`, found by inode in its `/proc/<pid>/net/tcp` and
/// `tcp6`.
fn sockets(pid: u32) -> std::io::Result<Vec<(u64, u16)>> {
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
    let mut found = Vec::new();
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
                found.push((inode, port));
            }
        }
    }
    Ok(found)
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

    #[test]
    fn a_connection_opened_again_is_a_new_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connect = || std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (kept, dropped) = (connect(), connect());
        let before = tcp_sockets_to(std::process::id(), port).unwrap();
        assert_eq!(before.len(), 2, "{before:?}");
        drop(dropped);
        let again = connect();
        let after = tcp_sockets_to(std::process::id(), port).unwrap();
        assert_eq!(after.len(), 2, "{after:?}");
        assert_eq!(before.intersection(&after).count(), 1, "{before:?} {after:?}");
        drop((kept, again));
    }
}
