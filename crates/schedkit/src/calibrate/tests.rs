use super::*;
use std::collections::HashMap;

#[test]
fn cpu_lists_and_sizes_parse() {
    assert_eq!(
        parse_cpu_list("0-3,8,10-11"),
        Some(vec![0, 1, 2, 3, 8, 10, 11])
    );
    assert_eq!(parse_cpu_list("0"), Some(vec![0]));
    assert_eq!(parse_cpu_list(" 0,2 \n"), Some(vec![0, 2]));
    assert_eq!(parse_cpu_list(""), Some(vec![]));
    assert_eq!(parse_cpu_list("3-1"), None);
    assert_eq!(parse_cpu_list("a"), None);
    assert_eq!(parse_size_kb("32768K\n"), Some(32768));
    assert_eq!(parse_size_kb("1M"), Some(1024));
    assert_eq!(parse_size_kb("48K"), Some(48));
    assert_eq!(parse_size_kb("512"), Some(512));
    assert_eq!(parse_size_kb("K"), None);
}

#[test]
fn proc_files_parse() {
    let config =
        "# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_HZ_PERIODIC=n\n";
    assert_eq!(parse_config_hz(config), Some(250));
    assert_eq!(parse_config_hz("CONFIG_HZ_1000=y\n"), None);
    let tl = "Timer List Version: v0.10\nnow at 1244047809526 nsecs\n  .idle_jiffies   : 4295223016\njiffies: 4295224156\njiffies: 4295224157\n";
    assert_eq!(parse_timer_list_jiffies(tl), Some(4295224156));
    let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.120\n\nprocessor\t: 1\ncpu MHz\t\t: 1800.0\n";
    assert_eq!(
        parse_cpuinfo(cpuinfo),
        (Some("AMD EPYC".to_string()), Some(2596.12))
    );
    let smaps = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \nSize:               4096 kB\nAnonHugePages:      2048 kB\n7f0000400000-7f0000800000 rw-p 00000000 00:00 0 \nAnonHugePages:         0 kB\n";
    assert_eq!(parse_smaps_huge_kb(smaps, 0x7f00_0000_1000), Some(2048));
    assert_eq!(parse_smaps_huge_kb(smaps, 0x7f00_0040_0000), Some(0));
    assert_eq!(parse_smaps_huge_kb(smaps, 0x1000), None);
}

#[test]
fn small_helpers() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    assert!(median(&[]).is_nan());
    assert_eq!(civil_date(0), "1970-01-01");
    assert_eq!(civil_date(20_000), "2024-10-04");
    assert_eq!(civil_date(11_016), "2000-02-29");
    assert_eq!(toml_string("a \"b\"\\\n"), "\"a \\\"b\\\"\\\\\\u000A\"");
    assert_eq!(fmt_float(4.814), "4.81");
    assert_eq!(fmt_float(13.54), "13.5");
    assert_eq!(fmt_float(2596.12), "2596.0");
    assert!(check_name("").is_err() && check_name("a\nb").is_err());
    assert!(check_name("my box").is_ok());
    let stat = "cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 100 0 50 800 20 5 5 20 0 0\ncpu1 1 1 1 1 1\n";
    assert_eq!(parse_proc_stat_cpu(stat, 0), Some((820, 1000)));
    assert_eq!(parse_proc_stat_cpu(stat, 1), Some((2, 5)));
    assert_eq!(parse_proc_stat_cpu(stat, 2), None);
    assert_eq!(parse_proc_stat_cpu_all(stat), Some((9, 36)));
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn the_chase_visits_every_line_once() {
    use super::measure::{chase, link_chase, Rng, LINE_WORDS};
    let lines = 1000;
    let mut buf = vec![0usize; lines * LINE_WORDS];
    link_chase(&mut buf, &mut Rng::new(7));
    let mut seen = vec![false; lines];
    let mut p = 0;
    for _ in 0..lines {
        assert_eq!(p % LINE_WORDS, 0);
        assert!(!seen[p / LINE_WORDS], "line {} twice", p / LINE_WORDS);
        seen[p / LINE_WORDS] = true;
        p = chase(&buf, p, 1);
    }
    assert_eq!(p, 0, "one cycle through every line");
    assert_eq!(chase(&buf, 0, lines as u64), 0);
}

#[test]
fn timer_wakeups_are_read_from_tracefs_text() {
    let text = "\
# tracer: nop
           probe-77      [000] d.h2.   100.000010: sched_waking: comm=sleeper pid=42 prio=120 target_cpu=000
           probe-77      [000] d..2.   100.000018: sched_switch: prev_comm=probe prev_pid=77 prev_prio=139 prev_state=R ==> next_comm=sleeper next_pid=42 next_prio=120
          <idle>-0       [000] d.h2.   100.001000: sched_waking: comm=sleeper pid=42 prio=120 target_cpu=000
          <idle>-0       [000] d..2.   100.001030: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sleeper next_pid=42 next_prio=120
           probe-77      [000] d..2.   100.002000: sched_waking: comm=sleeper pid=42 prio=120 target_cpu=000
           probe-77      [000] d..2.   100.002003: sched_switch: prev_comm=probe prev_pid=77 prev_prio=139 prev_state=R ==> next_comm=sleeper next_pid=42 next_prio=120
           probe-77      [000] d.h2.   100.003000: sched_waking: comm=other pid=420 prio=120 target_cpu=000
           probe-77      [000] d..2.   100.003004: sched_switch: prev_comm=probe prev_pid=77 prev_prio=139 prev_state=R ==> next_comm=other next_pid=420 next_prio=120
           probe-77      [000] dNh2.   100.004000: sched_waking: comm=sleeper pid=42 prio=120 target_cpu=000
           probe-77      [000] d..2.   100.0040075: sched_switch: prev_comm=probe prev_pid=77 prev_prio=139 prev_state=R ==> next_comm=sleeper next_pid=42 next_prio=120
";
    // The first: in a hardirq on a busy CPU. Not the idle CPU's, not the task-context
    // one, not another pid; the last has a fraction of 7 digits.
    assert_eq!(timer_wake_intervals(text, 42), vec![8_000, 7_500]);
}

#[test]
fn tick_gaps_keep_the_ticks_phase() {
    // HZ=250: ticks every 4 ms at phase 1.2 ms, 3 us each; other interrupts at other
    // phases, 20 us each; one 4 ms gap (another task) at the tick's phase is left out.
    let mut g = vec![];
    for k in 0..50u64 {
        g.push((k * 4_000_000 + 1_200_000 + (k % 3) * 1000, 3_000));
        g.push((k * 4_000_000 + 2_000_000 + k * 30_000, 20_000));
    }
    g.push((60 * 4_000_000 + 1_200_500, 4_000_000));
    let t = tick_gaps(&g, 250, 20_000, 1_000_000);
    assert_eq!(t.len(), 50);
    assert!(t.iter().all(|&d| d == 3_000));
    // A phase near the wrap-around (3.99 ms and 0.005 ms) still counts as one.
    let g: Vec<(u64, u64)> = (0..40u64)
        .map(|k| {
            (
                k * 4_000_000 + if k % 2 == 0 { 3_995_000 } else { 5_000 },
                1_500,
            )
        })
        .collect();
    assert_eq!(tick_gaps(&g, 250, 20_000, 1_000_000).len(), 40);
    assert!(tick_gaps(&[], 250, 20_000, 1_000_000).is_empty());
}

/// A fake /sys of an i7-M620-like machine: 2 cores x 2 threads (siblings 0,2 and 1,3),
/// an L2 per core, one 4 MB L3, one package, one node.
fn i7_sys() -> HashMap<String, String> {
    let mut f = HashMap::new();
    let cpu = |c: usize| format!("/sys/devices/system/cpu/cpu{c}");
    for c in 0..4 {
        let sib = if c % 2 == 0 { "0,2" } else { "1,3" };
        f.insert(
            format!("{}/topology/thread_siblings_list", cpu(c)),
            sib.into(),
        );
        f.insert(
            format!("{}/topology/physical_package_id", cpu(c)),
            "0".into(),
        );
        for (i, (level, ty, size, shared)) in [
            (1, "Data", "32K", sib),
            (1, "Instruction", "32K", sib),
            (2, "Unified", "256K", sib),
            (3, "Unified", "4096K", "0-3"),
        ]
        .into_iter()
        .enumerate()
        {
            let b = format!("{}/cache/index{i}", cpu(c));
            f.insert(format!("{b}/level"), level.to_string());
            f.insert(format!("{b}/type"), ty.into());
            f.insert(format!("{b}/size"), size.into());
            f.insert(format!("{b}/shared_cpu_list"), shared.into());
        }
    }
    f.insert(
        "/sys/devices/system/node/node0/cpulist".into(),
        "0-3".into(),
    );
    f
}

#[test]
fn topology_from_a_fake_sys() {
    let f = i7_sys();
    let read = |p: &str| f.get(p).cloned();
    let t = read_topology(&read, &[0, 1, 2, 3], "0-3");
    assert_eq!(
        (
            t.cpus,
            t.threads_per_core,
            t.cpus_per_cache,
            t.cpus_per_package,
            t.cpus_per_node
        ),
        (4, 2, 4, 4, 4)
    );
    assert_eq!(t.llc_kb, Some(4096));
    let (per_l2, l2_kb, note) = t.l2.clone().unwrap();
    assert_eq!((per_l2, l2_kb), (2, 256));
    assert!(note.contains("index2") && note.contains("0,2"), "{note}");
    assert!(t.cache_note.contains("index3") && t.cache_note.contains("0-3"));
    assert_eq!(t.siblings[1], vec![1, 3]);

    // Two packages of 2 CPUs, each with its own L3 (shared as widely as the L2 would be
    // left out), two nodes.
    let mut f = i7_sys();
    for c in 0..4 {
        let b = format!("/sys/devices/system/cpu/cpu{c}");
        let pk = if c < 2 { "0" } else { "1" };
        f.insert(format!("{b}/topology/physical_package_id"), pk.into());
        f.insert(format!("{b}/topology/thread_siblings_list"), c.to_string());
        let l3 = if c < 2 { "0-1" } else { "2-3" };
        f.insert(format!("{b}/cache/index3/shared_cpu_list"), l3.into());
        f.insert(format!("{b}/cache/index2/shared_cpu_list"), l3.into());
    }
    f.insert(
        "/sys/devices/system/node/node0/cpulist".into(),
        "0-1".into(),
    );
    f.insert(
        "/sys/devices/system/node/node1/cpulist".into(),
        "2-3".into(),
    );
    let read = |p: &str| f.get(p).cloned();
    let t = read_topology(&read, &[0, 1, 2, 3], "0-3");
    assert_eq!(
        (
            t.threads_per_core,
            t.cpus_per_cache,
            t.cpus_per_package,
            t.cpus_per_node
        ),
        (1, 2, 2, 2)
    );
    assert!(
        t.l2.is_none() && t.l2_absent_note.contains("as widely"),
        "{}",
        t.l2_absent_note
    );

    // Nothing in /sys: one CPU group of everything, notes say so.
    let read = |_: &str| -> Option<String> { None };
    let t = read_topology(&read, &[0, 1, 2], "0-2");
    assert_eq!((t.cpus, t.threads_per_core, t.cpus_per_cache), (3, 1, 3));
    assert_eq!(t.llc_kb, None);
    assert!(t.cache_note.contains("no cache"));

    // Uneven groups (3 CPUs, siblings of 2) fall back to counts that divide.
    let (n, note) = uniform(&[2, 2, 1], 3, 1, "threads per core");
    assert_eq!(n, 1);
    assert!(note.unwrap().contains("does not divide"));
    let (n, note) = uniform(&[2, 1, 2, 1], 4, 1, "threads per core");
    assert_eq!(n, 2);
    assert!(note.unwrap().contains("differs"));
}

#[test]
fn cpufreq_as_host_reads_it() {
    let mut f = HashMap::new();
    let b = "/sys/devices/system/cpu/cpu0/cpufreq";
    f.insert(
        format!("{b}/scaling_available_frequencies"),
        "2667000 2400000 1200000".to_string(),
    );
    f.insert(format!("{b}/related_cpus"), "0".into());
    f.insert(format!("{b}/scaling_governor"), "ondemand".into());
    f.insert(format!("{b}/cpuinfo_transition_latency"), "10000".into());
    let read = |p: &str| f.get(p).cloned();
    let c = read_cpufreq(&read).unwrap();
    assert_eq!(c.pstates_mhz, vec![1200.0, 2400.0, 2667.0]);
    assert_eq!(
        (c.package, c.governor, c.transition_ns),
        (false, "ondemand", 10_000.0)
    );
    // intel_pstate: min and max only, a governor schedkit does not model.
    let mut f = HashMap::new();
    f.insert(format!("{b}/cpuinfo_min_freq"), "800000".to_string());
    f.insert(format!("{b}/cpuinfo_max_freq"), "4200000".to_string());
    f.insert(format!("{b}/related_cpus"), "0 1 2 3".into());
    f.insert(format!("{b}/scaling_governor"), "conservative".into());
    let read = |p: &str| f.get(p).cloned();
    let c = read_cpufreq(&read).unwrap();
    assert_eq!(c.pstates_mhz, vec![800.0, 4200.0]);
    assert_eq!((c.package, c.governor), (true, "performance"));
    assert!(c.transition_note.starts_with("estimate"));
    let read = |_: &str| -> Option<String> { None };
    assert!(read_cpufreq(&read).is_none());
}

fn ok(v: f64) -> Fig {
    fig(v, "test")
}

/// host.toml's own numbers ("M"): a 2.72 us pipe round trip on one CPU, 200 + 190 ns of
/// pipe work per hop, lat_proc fork 220 us, exec 980 us, shell 2.7 ms; and a fork() call
/// of 66 us (the recorded hackbench's forks come 66 us apart, docs/validation.md).
fn host_like_raw() -> Raw {
    Raw {
        mhz: 2500.0,
        syscall: ok(100.0),
        atomic: ok(8.0),
        pipe_write: ok(200.0),
        pipe_read: ok(190.0),
        pipe_write_timed: ok(261.0),
        rt_local: ok(2720.0),
        // local hop 1360 + 2500 more to a busy CPU; + 35 us more to an idle one.
        rt_busy: ok(7720.0),
        rt_idle: ok(77_720.0),
        write_wake_busy: ok(3261.0),
        timer_irq: ok(17_600.0),
        timer_wake_exit: ok(8_000.0),
        fork: ok(220_000.0),
        fork_call: ok(66_000.0),
        wait: ok(1000.0),
        exec: ok(980_000.0),
        // sh -c 'exit 0': fork + exec (980 us) and the shell's 740 us start-up.
        shell: ok(1_720_000.0),
        sock_send: ok(700.0),
        sock_recv: ok(690.0),
        cow: ok(700.0),
        cache_latency: ok(12.0),
        mem_latency: ok(90.0),
        mem_read: ok(10_000.0),
        llc_read: Some(ok(80_000.0)),
    }
}

fn get(v: &[Entry], key: &str) -> Entry {
    v.iter()
        .find(|e| e.key == key)
        .cloned()
        .unwrap_or_else(|| panic!("no {key}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

#[test]
fn derivations_split_as_host_toml_does() {
    let host = host_profile();
    let (c, k) = derive(&host_like_raw(), &host);
    // Switch: (2720 - 2 x 390) / 2 = 970, less 4 x (10 cycles at 2.5 GHz + 12 ns) = 64.
    assert!(close(get(&c, "context_switch_ns").value, 906.0));
    assert!(close(get(&c, "ipi_send_ns").value, 3000.0));
    // (7720 - 2720) / 2 = 2500 more per hop, less the IPI's handling priced as the
    // 100 ns system call.
    assert!(close(get(&c, "ipi_irq_ns").value, 100.0));
    assert!(close(get(&c, "ipi_latency_ns").value, 2400.0));
    assert!(close(get(&c, "idle_exit_ns").value, 35_000.0));
    assert!(close(get(&c, "timer_irq_ns").value, 17_600.0));
    assert!(close(get(&c, "timer_wake_exit_ns").value, 8_000.0));
    assert!(close(get(&c, "llc_read_mb_s").value, 80_000.0));
    // Fork: the fork() call, 66 000. Exit: lat_proc fork 220 000 - 1000 (wait) - 2 x 970
    // (switches) = 217 060, less the fork() call: 151 060.
    let f = get(&k, "fork_ns");
    assert!(close(f.value, 66_000.0));
    assert_eq!(f.note, "measured: test");
    assert!(
        f.above
            .iter()
            .any(|l| l.contains("(66000, fork_ns): 151060")),
        "{:?}",
        f.above
    );
    assert!(close(get(&k, "exit_ns").value, 151_060.0));
    assert!(close(get(&k, "wait_ns").value, 1000.0));
    assert!(close(get(&k, "exec_ns").value, 760_000.0));
    assert!(close(get(&k, "shell_startup_ns").value, 740_000.0));
    assert!(close(get(&k, "pipe_write_ns").value, 200.0));
    assert!(close(get(&k, "sock_recv_ns").value, 690.0));
    for e in c.iter().chain(&k) {
        // The IPI's handling alone is an estimate (no round trip separates it).
        let how = if e.key == "ipi_irq_ns" {
            "estimate"
        } else {
            "measured"
        };
        assert!(e.note.starts_with(how), "{}: {}", e.key, e.note);
    }
    // The part after the wakeup cannot exceed the whole interrupt.
    let mut raw = host_like_raw();
    raw.timer_wake_exit = ok(30_000.0);
    let (c, _) = derive(&raw, &host);
    let e = get(&c, "timer_wake_exit_ns");
    assert!(
        close(e.value, 17_600.0) && e.note.contains("clamped"),
        "{e:?}"
    );
}

#[test]
fn what_is_not_measured_is_copied_from_host_and_says_why() {
    let host = host_profile();
    let mut raw = host_like_raw();
    let one = "only one CPU is available to this process".to_string();
    raw.rt_busy = Err(one.clone());
    raw.rt_idle = Err(one.clone());
    raw.write_wake_busy = Err(one);
    raw.exec = Err("no /bin/true".into());
    raw.llc_read = None;
    // A round trip shorter than its pipe work leaves the switch to host.
    raw.rt_local = ok(500.0);
    raw.timer_wake_exit = Err("tracefs is in use".into());
    let (c, k) = derive(&raw, &host);
    for (key, v) in [
        ("timer_wake_exit_ns", host.costs.timer_wake_exit_ns.unwrap()),
        ("ipi_send_ns", host.costs.ipi_send_ns),
        ("ipi_latency_ns", host.costs.ipi_latency_ns),
        ("idle_exit_ns", host.costs.idle_exit_ns),
        ("context_switch_ns", host.costs.context_switch_ns),
    ] {
        let e = get(&c, key);
        assert_eq!(e.value, v, "{key}");
        assert!(
            e.note.starts_with("copied from profiles/host.toml"),
            "{}",
            e.note
        );
    }
    assert!(get(&c, "ipi_send_ns").note.contains("only one CPU"));
    let e = get(&k, "exec_ns");
    assert!(e.value == host.kernel.exec_ns && e.note.contains("no /bin/true"));
    let e = get(&k, "shell_startup_ns");
    assert!(e.value == host.kernel.shell_startup_ns && e.note.contains("no /bin/true"));
    assert!(!c.iter().any(|e| e.key == "llc_read_mb_s"));
    // Costs that come out negative are clamped at 0 and say so.
    let mut raw = host_like_raw();
    // (2800 - 2720) / 2 = 40 ns more per hop, less the 100 ns handling: clamped.
    raw.rt_busy = ok(2800.0);
    raw.rt_idle = ok(2000.0);
    let (c, _) = derive(&raw, &host);
    let e = get(&c, "ipi_latency_ns");
    assert!(e.value == 0.0 && e.note.contains("clamped"), "{}", e.note);
    let e = get(&c, "idle_exit_ns");
    assert!(e.value == 0.0 && e.note.contains("clamped"), "{}", e.note);
}

#[test]
fn fork_and_exit_fall_back_to_the_2_to_1_split_and_clamp() {
    let host = host_profile();
    // The fork() call not measured: lat_proc fork less wait and switches (217 060, as
    // above) split 2:1, and the notes say why.
    let mut raw = host_like_raw();
    raw.fork_call = Err("fork: Resource temporarily unavailable".into());
    let (_, k) = derive(&raw, &host);
    let (f, e) = (get(&k, "fork_ns"), get(&k, "exit_ns"));
    assert!(close(f.value, 217_060.0 * 2.0 / 3.0), "{}", f.value);
    assert!(close(e.value, 217_060.0 / 3.0), "{}", e.value);
    assert!(f.note.contains("split by assumption") && e.note.contains("split by assumption"));
    let above = f.above.join("\n");
    assert!(
        above.contains("2:1") && above.contains("Resource temporarily unavailable"),
        "{above}"
    );
    // A fork() call as long as all of lat_proc fork less wait and switches leaves exit
    // nothing: clamped at 0, and the note says why; fork keeps its measured call.
    let mut raw = host_like_raw();
    raw.fork_call = ok(230_000.0);
    let (_, k) = derive(&raw, &host);
    assert!(close(get(&k, "fork_ns").value, 230_000.0));
    let e = get(&k, "exit_ns");
    assert!(
        e.value == 0.0 && e.note.contains("clamped at 0"),
        "{}",
        e.note
    );
    // A lat_proc fork shorter than its wait and switches (2900 < 1000 + 2 x 970 = 2940):
    // the whole figure is taken, and exit is 2900 - 500 = 2400.
    let mut raw = host_like_raw();
    raw.fork = ok(2900.0);
    raw.fork_call = ok(500.0);
    let (_, k) = derive(&raw, &host);
    assert!(close(get(&k, "fork_ns").value, 500.0));
    assert!(close(get(&k, "exit_ns").value, 2400.0));
    assert!(get(&k, "fork_ns")
        .above
        .iter()
        .any(|l| l.contains("the whole figure is taken")));
    // lat_proc fork not measured: both copied from host, whatever the fork() call says.
    let mut raw = host_like_raw();
    raw.fork = Err("fork: Cannot allocate memory".into());
    let (_, k) = derive(&raw, &host);
    for (key, v) in [
        ("fork_ns", host.kernel.fork_ns),
        ("exit_ns", host.kernel.exit_ns),
    ] {
        let e = get(&k, key);
        assert!(
            e.value == v && e.note.starts_with("copied from profiles/host.toml"),
            "{key}: {}",
            e.note
        );
    }
}

#[test]
fn a_rendered_profile_loads_and_every_value_has_a_comment() {
    let host = host_profile();
    let f = i7_sys();
    let read = |p: &str| f.get(p).cloned();
    let topo = read_topology(&read, &[0, 1, 2, 3], "0-3");
    let mut g = HashMap::new();
    let b = "/sys/devices/system/cpu/cpu0/cpufreq";
    g.insert(
        format!("{b}/scaling_available_frequencies"),
        "2667000 1200000".to_string(),
    );
    let read = |p: &str| g.get(p).cloned();
    let freq = read_cpufreq(&read).unwrap();
    for (with_freq, with_l2) in [(true, true), (false, false)] {
        let mut raw = host_like_raw();
        if !with_l2 {
            raw.llc_read = Some(Err("no time".into()));
        }
        let (costs, kernel) = derive(&raw, &host);
        let text = render(&ProfileParts {
            name: "my \"box\"",
            description: "test".into(),
            header: vec!["a header".into(), String::new(), "more".into()],
            topo: &topo,
            mhz: (2667.0, "test clock".into()),
            hz: (250, "test hz".into()),
            cpufreq: with_freq.then_some(&freq),
            costs,
            kernel,
            cow: ok(700.0),
            llc_read_missing: (!with_l2).then(|| "no time".to_string()),
        });
        let m = Machine::from_toml(&text, "rendered").unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(m.profile.name, "my \"box\"");
        assert_eq!(m.ncpus(), 4);
        assert_eq!(m.topology.core, vec![0, 0, 1, 1]);
        assert_eq!(m.profile.cache.l2_kb.is_some(), with_l2, "{text}");
        assert_eq!(m.profile.cpufreq.is_some(), with_freq);
        assert_eq!(m.profile.kernel.cow_fault_ns, None);
        assert!(text.contains("# cow_fault_ns = 700.0"));
        if !with_l2 {
            assert!(
                text.contains("l2_kb left out: the LLC's refill rate was not measured (no time)"),
                "{text}"
            );
        }
        // Every value line carries a comment.
        for l in text.lines() {
            if l.contains(" = ")
                && !l.starts_with('#')
                && !l.starts_with("name")
                && !l.starts_with("description")
            {
                assert!(l.contains(" # "), "no comment: {l}");
            }
        }
    }
}

#[test]
fn a_figure_no_profile_may_hold_is_refused_and_copied_from_host() {
    // On a busy machine every run of the LLC chase was preempted: 3.7 us per load, more than
    // `costs.cache_latency_ns` may be (0..=1000 ns). The profile takes host's value and says why.
    let host = host_profile();
    let mut raw = host_like_raw();
    raw.cache_latency = fig(
        3704.0,
        "pointer chase; every run was preempted by another task",
    );
    raw.atomic = fig(20_000.0, "locked add");
    let (c, _) = derive(&raw, &host);
    let cache = get(&c, "cache_latency_ns");
    assert!(close(cache.value, host.costs.cache_latency_ns));
    assert!(
        cache.note.starts_with("copied from profiles/host.toml"),
        "{}",
        cache.note
    );
    assert!(cache.note.contains("it measured 3704 ns"), "{}", cache.note);
    assert!(
        cache.note.contains("every run was preempted"),
        "{}",
        cache.note
    );
    assert!(close(get(&c, "atomic_ns").value, host.costs.atomic_ns));
    // In range: kept as measured.
    assert!(close(get(&c, "mem_latency_ns").value, 90.0));
}
