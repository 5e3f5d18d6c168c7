//! What the app costs in memory, read from /proc: the proportional set size (PSS) of the
//! app's process and every process it started (WebKit's web and network processes
//! included), so memory shared between them is counted once.

use std::collections::HashMap;

/// PSS in KiB of `pid` and all its descendants, and how many processes that is.
pub fn pss_tree_kib(pid: u32) -> (u64, usize) {
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
    let (mut total, mut count) = (0, 0);
    while let Some(p) = stack.pop() {
        count += 1;
        if let Ok(rollup) = std::fs::read_to_string(format!("/proc/{p}/smaps_rollup")) {
            total += rollup
                .lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
        stack.extend(children.get(&p).into_iter().flatten());
    }
    (total, count)
}
