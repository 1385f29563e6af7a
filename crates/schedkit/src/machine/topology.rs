//! [`Topology`]: the core, last-level cache, L2, NUMA node and package of each CPU, derived
//! from a profile's `[topology]` (or read from `/sys` for `host`, see `host.rs`).

use super::TopologySpec;
use crate::task::CpuMask;

/// Topology facts per CPU, derived from a profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub ncpus: usize,
    /// Physical core of each CPU (SMT siblings share it).
    pub core: Vec<usize>,
    /// Last-level cache domain of each CPU.
    pub cache: Vec<usize>,
    /// NUMA node of each CPU.
    pub node: Vec<usize>,
    /// L2 cache of each CPU (the LLC where there is no separate L2).
    pub l2: Vec<usize>,
    /// Package (socket) of each CPU.
    pub package: Vec<usize>,
    /// `node_distance(a, b)` at `a * nnodes + b` (the ACPI SLIT; the kernel's defaults,
    /// `LOCAL_DISTANCE` 10 and `REMOTE_DISTANCE` 20, where the profile gives none).
    pub node_distance: Vec<u32>,
    /// Hybrid machines (`machine/hybrid.rs`): the core type of each CPU (empty: one type).
    pub core_type: Vec<usize>,
    /// `arch_scale_cpu_capacity` of each CPU (1024 everywhere on a machine of one type).
    pub capacity: Vec<u64>,
    /// `arch_asym_cpu_priority` of each CPU (x86 ITMT; 0 everywhere without it).
    pub asym_prio: Vec<u32>,
    /// Some domain has `SD_ASYM_CPUCAPACITY` (CPUs of different capacities).
    pub asym_capacity: bool,
    /// The SMT and MC domains have `SD_ASYM_PACKING` (x86 ITMT).
    pub asym_packing: bool,
    /// The Energy Model's performance domains (empty: no EM registered).
    pub em: Vec<super::EmDomain>,
}

/// `LOCAL_DISTANCE` and `REMOTE_DISTANCE` (`include/linux/topology.h`).
pub const LOCAL_DISTANCE: u32 = 10;
pub const REMOTE_DISTANCE: u32 = 20;

/// The kernel's default distance table for `nnodes` nodes.
pub fn default_distances(nnodes: usize) -> Vec<u32> {
    (0..nnodes * nnodes)
        .map(|i| {
            if i / nnodes == i % nnodes {
                LOCAL_DISTANCE
            } else {
                REMOTE_DISTANCE
            }
        })
        .collect()
}

impl Topology {
    pub fn from_spec(s: &TopologySpec) -> Topology {
        let n = s.cpus;
        let per_node = s.cpus_per_node.unwrap_or(n).max(1);
        let per_l2 = s
            .cpus_per_l2
            .unwrap_or(s.threads_per_core.min(s.cpus_per_cache))
            .max(1);
        let per_pkg = s.cpus_per_package.unwrap_or(n).max(1);
        let nnodes = n.div_ceil(per_node).max(1);
        Topology {
            ncpus: n,
            core: (0..n).map(|c| c / s.threads_per_core.max(1)).collect(),
            cache: (0..n).map(|c| c / s.cpus_per_cache.max(1)).collect(),
            node: (0..n).map(|c| c / per_node).collect(),
            l2: (0..n).map(|c| c / per_l2).collect(),
            package: (0..n).map(|c| c / per_pkg).collect(),
            node_distance: default_distances(nnodes),
            ..Topology::symmetric(n)
        }
    }

    /// The per-CPU facts of a machine whose CPUs are all alike: capacity 1024, no ITMT
    /// priority, no asymmetry, no Energy Model (the other fields empty, to be filled).
    pub fn symmetric(n: usize) -> Topology {
        Topology {
            ncpus: n,
            core: Vec::new(),
            cache: Vec::new(),
            node: Vec::new(),
            l2: Vec::new(),
            package: Vec::new(),
            node_distance: Vec::new(),
            core_type: Vec::new(),
            capacity: vec![super::hybrid::CAPACITY_SCALE; n],
            asym_prio: vec![0; n],
            asym_capacity: false,
            asym_packing: false,
            em: Vec::new(),
        }
    }

    /// `arch_scale_cpu_capacity(cpu)`.
    #[inline]
    pub fn capacity_of(&self, cpu: usize) -> u64 {
        self.capacity
            .get(cpu)
            .copied()
            .unwrap_or(super::hybrid::CAPACITY_SCALE)
    }

    /// The largest capacity of the machine.
    pub fn max_capacity(&self) -> u64 {
        self.capacity
            .iter()
            .copied()
            .max()
            .unwrap_or(super::hybrid::CAPACITY_SCALE)
    }

    /// NUMA nodes (`node` numbers run 0..nnodes).
    pub fn nnodes(&self) -> usize {
        self.node.iter().copied().max().map_or(0, |m| m + 1)
    }

    /// `node_distance` between the nodes of CPUs `a` and `b`.
    pub fn cpu_distance(&self, a: usize, b: usize) -> u32 {
        let n = self.nnodes();
        self.node_distance
            .get(self.node[a] * n + self.node[b])
            .copied()
            .unwrap_or(REMOTE_DISTANCE)
    }

    /// A flat SMP machine of `n` CPUs, each with its own cache.
    pub fn flat(n: usize) -> Topology {
        Topology::from_spec(&TopologySpec {
            cpus: n,
            threads_per_core: 1,
            cpus_per_cache: 1,
            cpus_per_node: None,
            cpus_per_l2: None,
            cpus_per_package: None,
        })
    }

    /// Physical cores (`core` numbers run 0..ncores).
    pub fn ncores(&self) -> usize {
        self.core.iter().copied().max().map_or(0, |m| m + 1)
    }

    pub fn all_cpus(&self) -> CpuMask {
        CpuMask::first_n(self.ncpus)
    }

    pub fn ncaches(&self) -> usize {
        self.cache.iter().copied().max().map_or(0, |m| m + 1)
    }
}
