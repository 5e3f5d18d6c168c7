//! What the app costs in memory, read from /proc: the proportional set size (PSS) of the
//! app's process and every process it started (WebKit's web and network processes
//! included), so memory shared between them is counted once.

use std::collections::HashMap;

/// PSS in KiB of `pid` and all its descendants, and how many processes that is.
pub fn pss_tree_kib(pid: u32) -> (u64, usize) {
    let each = pss_by_process(pid);
    (each.iter().map(|p| p.kib).sum(), each.len())
}

/// Anonymous memory (heaps, stacks: what the processes allocated themselves) in KiB of
/// `pid` and its descendants. Unlike PSS (and USS) it does not move when other processes
/// map the same library files, so differences between two samples are steadier on a
/// shared machine.
pub fn anonymous_tree_kib(pid: u32) -> u64 {
    pss_by_process(pid).iter().map(|p| p.anonymous_kib).sum()
}

/// One process's share.
#[derive(Debug, Clone)]
pub struct ProcessPss {
    /// Its pid.
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`).
    pub name: String,
    /// Its PSS in KiB.
    pub kib: u64,
    /// Its anonymous memory in KiB.
    pub anonymous_kib: u64,
}

/// The PSS of `pid` and each of its descendants, `pid` first.
pub fn pss_by_process(pid: u32) -> Vec<ProcessPss> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let Some(p) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // ppid is the 2nd field after the parenthesised command name.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if let Some(ppid) = rest
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse::<u32>().ok())
        {
            children.entry(ppid).or_default().push(p);
        }
    }
    let mut stack = vec![pid];
    let mut out = Vec::new();
    while let Some(p) = stack.pop() {
        let rollup = std::fs::read_to_string(format!("/proc/{p}/smaps_rollup")).unwrap_or_default();
        let field = |name: &str| {
            rollup
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let kib = field("Pss:");
        let anonymous_kib = field("Anonymous:");
        let name = std::fs::read_to_string(format!("/proc/{p}/comm"))
            .map(|n| n.trim().to_owned())
            .unwrap_or_default();
        out.push(ProcessPss {
            pid: p,
            name,
            kib,
            anonymous_kib,
        });
        stack.extend(children.get(&p).into_iter().flatten());
    }
    out
}
