//! How the process's allocator (glibc's) keeps and returns memory, for the engine's workloads.
//!
//! Two settings made when the module loads ([`keep_freed_memory`]), another when the
//! engine-written export starts ([`map_big_blocks`]), and a watch that export runs as it goes
//! ([`HeapWatch`]). Elsewhere than Linux with glibc these
//! do nothing.

/// glibc's allocator gives memory back to the system as soon as the top of its heap is free
/// (128 KiB at first) and serves big allocations by mappings of their own: a capture's 64 KiB
/// loopback segments and multi-segment frames then take fresh pages again and again, each
/// zeroed by the kernel on first touch (perf on the plain timeline of the 224 MB benchmark
/// capture: page clearing and faults ~6% of the run, 21,300 page faults). Freed memory is kept
/// for the next allocation instead, up to 64 MiB at the top of the heap, and allocations below
/// 8 MiB come from the heap (10,600 faults). Bigger ones keep their own mappings, which grow
/// in place: with 32 MiB (glibc's maximum) the hostile set's 100 MB frames peaked ~35 MB
/// higher, with 8 MiB within ~8 MB of before (`benchmarks/hostile.py --only pulsar-max-frame
/// kafka-max-record`). The engine-written export maps from 1 MiB ([`map_big_blocks`]).
pub fn keep_freed_memory() {
    set(64 << 20, 8 << 20);
}

/// Allocations of 1 MiB and more get mappings of their own, for the rest of the process: the
/// engine-written export's setting, made when its files are created.
///
/// Why: the export frees and reuses big blocks on two threads (a big frame's buffers, its text
/// and its records: a Fetch response of 25,000 records takes ~60 MB for a moment, and the
/// writer's pages); from the heap they left holes the resident memory kept. Measured on the
/// benchmark capture's export: peak RSS 138 → 113 MB, ten times the capture 174 → 152 MB (before
/// [`HeapWatch`]), the same CPU time. The timeline keeps 8 MiB: its capture reader's buffers
/// would be mapped and faulted in again for every chunk (1.00 → 1.02 s on the same capture).
pub fn map_big_blocks() {
    set(64 << 20, 1 << 20);
}

fn set(trim: usize, mmap: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::raw::c_int;
        extern "C" {
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        const M_TRIM_THRESHOLD: c_int = -1;
        const M_MMAP_THRESHOLD: c_int = -3;
        let as_int = |v: usize| c_int::try_from(v).unwrap_or(c_int::MAX);
        // SAFETY: `mallopt` is glibc's (this block is compiled for linux-gnu only), takes two
        // integers by value, touches no memory of ours and is safe to call at any time from any
        // thread (it takes the arena lock); an out-of-range value is refused (returns 0), which
        // leaves the allocator as it was.
        unsafe {
            mallopt(M_TRIM_THRESHOLD, as_int(trim));
            mallopt(M_MMAP_THRESHOLD, as_int(mmap));
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = (trim, mmap);
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

/// glibc's `mallinfo2` (2.33 and later), looked up when first asked: a module linked against it
/// by name would not load at all on an older glibc, where the watch simply never trims.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn mallinfo2() -> Option<Mallinfo2> {
    use std::os::raw::{c_char, c_void};
    use std::sync::OnceLock;
    extern "C" {
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }
    type Fn = unsafe extern "C" fn() -> Mallinfo2;
    static FOUND: OnceLock<Option<Fn>> = OnceLock::new();
    let f = FOUND.get_or_init(|| {
        // SAFETY: `dlsym` with RTLD_DEFAULT (a null handle) searches the loaded objects for a
        // NUL-terminated name and returns its address or null; a non-null address of glibc's
        // `mallinfo2` is a function taking nothing and returning the struct declared below
        // (glibc's `struct mallinfo2`, ten `size_t`), so the transmute gives it its own type.
        unsafe {
            let p = dlsym(std::ptr::null_mut(), c"mallinfo2".as_ptr());
            (!p.is_null()).then(|| std::mem::transmute::<*mut c_void, Fn>(p))
        }
    });
    // SAFETY: `f` is glibc's `mallinfo2` (above); it only reads the allocator's own state under
    // its locks.
    f.map(|f| unsafe { f() })
}

/// glibc's `struct mallinfo2`, field for field.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[repr(C)]
#[allow(dead_code)] // read by glibc's layout; only two fields are used
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

/// Resident memory minus the bytes malloc has handed out and not had back (heap and mappings).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn gap() -> Option<usize> {
    extern "C" {
        fn sysconf(name: std::os::raw::c_int) -> std::os::raw::c_long;
    }
    const SC_PAGESIZE: std::os::raw::c_int = 30; // Linux's `_SC_PAGESIZE`
    let info = mallinfo2()?;
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: `sysconf` takes an integer by value and returns one (-1 for an unknown name).
    let page = unsafe { sysconf(SC_PAGESIZE) };
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
