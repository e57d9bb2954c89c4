//! How the process's allocator (glibc's) keeps and returns memory, for the engine's workloads.
//!
//! Two settings made once, when the module loads ([`keep_freed_memory`]), and one watch the
//! engine-written export runs as it goes ([`HeapWatch`]). Elsewhere than Linux with glibc these
//! do nothing.

/// glibc's allocator gives memory back to the system as soon as the top of its heap is free
/// (128 KiB at first) and serves big allocations by mappings of their own: a capture's 64 KiB
/// loopback segments and multi-segment frames then take fresh pages again and again, each
/// zeroed by the kernel on first touch (perf on the plain timeline of the 224 MB benchmark
/// capture: page clearing and faults ~6% of the run, 21,300 page faults). Freed memory is kept
/// for the next allocation instead, up to 64 MiB at the top of the heap.
///
/// Allocations of 1 MiB and more keep mappings of their own (glibc's default threshold rises
/// to 32 MiB as such blocks are freed): a big frame's buffers, its text and its records (a
/// Fetch response of 25,000 records takes ~60 MB for a moment) then leave no holes in the
/// heap when they are freed. Measured on the benchmark capture's export: peak RSS 138 → 113
/// MB at 1 MiB (8 MiB before), ten times the capture 174 → 152 MB, the same CPU time; the
/// plain timeline the same (1.01 s, 43 MB). With 32 MiB (glibc's maximum) the hostile set's
/// 100 MB frames peaked ~35 MB higher.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::raw::c_int;
        extern "C" {
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        const M_TRIM_THRESHOLD: c_int = -1;
        const M_MMAP_THRESHOLD: c_int = -3;
        // SAFETY: `mallopt` is glibc's (this block is compiled for linux-gnu only), takes two
        // integers by value, touches no memory of ours and is safe to call at any time from any
        // thread (it takes the arena lock); an out-of-range value is refused (returns 0), which
        // leaves the allocator as it was.
        unsafe {
            mallopt(M_TRIM_THRESHOLD, 64 << 20);
            mallopt(M_MMAP_THRESHOLD, 1 << 20);
        }
    }
}

/// Gives the pages of freed heap memory back to the system when they pile up: the export's
/// memory stays flat however long the capture.
///
/// Why: a long export frees and reuses heap memory of every size on two threads (the engine's
/// and the writer's arenas); glibc keeps what it frees and only the top of a heap is ever
/// trimmed, so the resident memory crept up with each burst of big frames (ten times the
/// benchmark capture: 113 → 152 MB while the live heap stayed at ~107 MB, measured with
/// heaptrack). `malloc_trim` hands back every whole free page; it is called only once the
/// resident memory exceeds what is live by [`HeapWatch::SLACK`] more than it did at the
/// start, so the pages it releases are not faulted in again at once (trimming whenever free
/// memory exceeded 32 MiB cost 15 s of system time on ten times the capture).
pub struct HeapWatch {
    /// Resident memory that is not the heap's (code, Python, stacks), measured at the start.
    base: usize,
    /// Calls until the next look.
    countdown: u32,
}

impl HeapWatch {
    /// Resident memory beyond the live heap (and the start's) that calls for a trim.
    pub const SLACK: usize = 32 << 20;
    /// Looks once every this many calls of [`HeapWatch::tick`] (each a few batches written).
    const EVERY: u32 = 16;

    pub fn new() -> HeapWatch {
        HeapWatch {
            base: gap().unwrap_or(0),
            countdown: Self::EVERY,
        }
    }

    /// Called as the export goes; trims now and then (see the type's doc).
    pub fn tick(&mut self) {
        self.countdown -= 1;
        if self.countdown > 0 {
            return;
        }
        self.countdown = Self::EVERY;
        if gap().is_some_and(|g| g > self.base + Self::SLACK) {
            trim();
        }
    }
}

impl Default for HeapWatch {
    fn default() -> Self {
        HeapWatch::new()
    }
}

/// Resident memory minus the bytes malloc has handed out and not had back (heap and mappings).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn gap() -> Option<usize> {
    #[repr(C)]
    struct Mallinfo2 {
        arena: usize,
        ordblks: usize,
        smblks: usize,
        hblks: usize,
        hblkhd: usize,
        usmblks: usize,
        fsmblks: usize,
        uordblks: usize,
        fordblks: usize,
        keepcost: usize,
    }
    extern "C" {
        fn mallinfo2() -> Mallinfo2;
        fn sysconf(name: std::os::raw::c_int) -> std::os::raw::c_long;
    }
    const SC_PAGESIZE: std::os::raw::c_int = 30; // Linux's `_SC_PAGESIZE`
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: `sysconf` takes an integer by value and returns one (-1 for an unknown name);
    // glibc's `mallinfo2` (glibc ≥ 2.33, linux-gnu only) takes no argument and returns a struct
    // of ten `size_t` by value (declared here field for field, `repr(C)`); it only reads the
    // allocator's own state under its locks.
    let (page, info) = unsafe { (sysconf(SC_PAGESIZE), mallinfo2()) };
    let page = usize::try_from(page).ok().filter(|&p| p > 0)?;
    let live = info.uordblks + info.hblkhd;
    Some((pages * page).saturating_sub(live))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn gap() -> Option<usize> {
    None
}

fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: glibc's `malloc_trim` takes a size by value and only returns free memory of
        // its own arenas to the system (under their locks); no memory in use is touched.
        unsafe {
            malloc_trim(0);
        }
    }
}
