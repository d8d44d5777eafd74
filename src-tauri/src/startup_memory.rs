//! Memory the app process needed only to start, handed back once the main window's page has
//! loaded (Linux, 64-bit; the module is not built elsewhere).
//!
//! - **The executable's dynamic relocations** (`.rela.dyn`, about 3 MiB in the release build).
//!   The loader reads them once, before `main`, to fix the binary's pointers up for the address it
//!   was loaded at, and never again. They lie in a read-only mapping of the file that nothing
//!   writes, so their pages are dropped from the process (`madvise(MADV_DONTNEED)`) without losing
//!   a byte: a read would fault the same bytes back in from the file. Only whole pages inside a
//!   read-only segment are dropped; a binary whose relocations write its code (`TEXTREL`), or
//!   whose headers do not say where they are, keeps them.
//! - **glibc malloc's free pages**: what start-up allocated and freed (serving the page's
//!   assets, the core's first queries, on some 25 threads) stays in malloc's arenas until
//!   `malloc_trim(0)` gives the whole free pages back.
//!
//! The figures are in the README ("Where it went and where it goes"); `scripts/bench --desktop`
//! measures them.
#![allow(unsafe_code)]

use std::ops::Range;

/// What was handed back.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Released {
    /// The pages of `.rela.dyn` dropped, if any.
    pub relocations: Option<Range<usize>>,
    /// Whether malloc returned memory to the system.
    pub trimmed: bool,
}

/// Hands start-up memory back; see the module's docs. Cheap (a header walk, two system calls),
/// but takes malloc's locks for a moment: call it once, off the main thread.
pub fn release() -> Released {
    Released {
        relocations: drop_relocations(),
        trimmed: trim_malloc(),
    }
}

#[cfg(target_env = "gnu")]
fn trim_malloc() -> bool {
    // SAFETY: malloc_trim takes no pointers and is safe to call from any thread at any time.
    unsafe { libc::malloc_trim(0) == 1 }
}

#[cfg(not(target_env = "gnu"))]
fn trim_malloc() -> bool {
    false
}

fn drop_relocations() -> Option<Range<usize>> {
    let pages = own_relocation_pages()?;
    // SAFETY: `pages` is whole pages of a read-only, never-written file mapping of this
    // executable (checked by `relocation_pages`); MADV_DONTNEED on such pages only unmaps them,
    // and the next read maps the file's bytes again.
    let done = unsafe {
        libc::madvise(
            pages.start as *mut libc::c_void,
            pages.end - pages.start,
            libc::MADV_DONTNEED,
        )
    };
    (done == 0).then_some(pages)
}

/// The page size the kernel maps in.
fn page_size() -> usize {
    // SAFETY: sysconf takes no pointers.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

/// This executable's `.rela.dyn` pages, from its program headers (the kernel's auxiliary vector)
/// and its dynamic section.
fn own_relocation_pages() -> Option<Range<usize>> {
    // SAFETY: getauxval takes no pointers; AT_PHDR and AT_PHNUM are set by the kernel for every
    // ELF executable.
    let (phdr, phnum) = unsafe {
        (
            libc::getauxval(libc::AT_PHDR) as usize,
            libc::getauxval(libc::AT_PHNUM) as usize,
        )
    };
    if phdr == 0 || phnum == 0 {
        return None;
    }
    // SAFETY: the kernel mapped the executable's `phnum` program headers at `phdr`, readable and
    // alive for the whole process.
    let headers = unsafe { std::slice::from_raw_parts(phdr as *const libc::Elf64_Phdr, phnum) };
    let segments: Vec<Segment> = headers
        .iter()
        .map(|h| Segment {
            kind: h.p_type,
            flags: h.p_flags,
            vaddr: h.p_vaddr as usize,
            memsz: h.p_memsz as usize,
        })
        .collect();
    // The load address: where the headers are, less where the file says they are.
    let base = phdr.checked_sub(segments.iter().find(|s| s.kind == PT_PHDR)?.vaddr)?;
    let dynamic = segments.iter().find(|s| s.kind == PT_DYNAMIC)?;
    let count = dynamic.memsz / std::mem::size_of::<Elf64Dyn>();
    // SAFETY: PT_DYNAMIC's `memsz` bytes at `base + vaddr` are part of a loaded segment, mapped
    // readable for the whole process; the loader has finished writing them before `main`.
    let entries =
        unsafe { std::slice::from_raw_parts((base + dynamic.vaddr) as *const Elf64Dyn, count) };
    let entries: Vec<(i64, u64)> = entries
        .iter()
        .map(|entry| (entry.tag, entry.value))
        .take_while(|(tag, _)| *tag != DT_NULL)
        .collect();
    relocation_pages(base, &segments, &entries, page_size())
}

// ELF's numbers (System V ABI).
const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_PHDR: u32 = 6;
const PF_W: u32 = 2;
const DT_NULL: i64 = 0;
const DT_RELA: i64 = 7;
const DT_RELASZ: i64 = 8;
const DT_TEXTREL: i64 = 22;
const DT_FLAGS: i64 = 30;
const DF_TEXTREL: u64 = 4;

/// An entry of the dynamic section (`Elf64_Dyn`, which the libc crate does not define).
#[repr(C)]
struct Elf64Dyn {
    tag: i64,
    value: u64,
}

/// A program header, as far as this module reads it.
#[derive(Debug, Clone, Copy)]
struct Segment {
    kind: u32,
    flags: u32,
    vaddr: usize,
    memsz: usize,
}

/// The whole pages of the relocation table named by `dynamic` (tag, value pairs), when they lie
/// in a loaded segment that is never written. glibc's loader rewrites the table's address in the
/// dynamic section to an absolute one, other loaders leave the file's: a value below the load
/// address is taken as the file's. Anything that does not check out gives None.
fn relocation_pages(
    base: usize,
    segments: &[Segment],
    dynamic: &[(i64, u64)],
    page: usize,
) -> Option<Range<usize>> {
    let value = |tag| {
        let (_, v) = dynamic.iter().find(|(t, _)| *t == tag)?;
        usize::try_from(*v).ok()
    };
    let text_relocations = dynamic
        .iter()
        .any(|&(tag, v)| tag == DT_TEXTREL || (tag == DT_FLAGS && v & DF_TEXTREL != 0));
    if text_relocations {
        return None;
    }
    let table = value(DT_RELA)?;
    let size = value(DT_RELASZ)?;
    let start = if table < base {
        base.checked_add(table)?
    } else {
        table
    };
    let end = start.checked_add(size)?;
    let read_only = segments.iter().any(|s| {
        let from = base.saturating_add(s.vaddr);
        s.kind == PT_LOAD
            && s.flags & PF_W == 0
            && from <= start
            && end <= from.saturating_add(s.memsz)
    });
    if !read_only || page == 0 {
        return None;
    }
    // Whole pages only: the table's first and last pages may hold other sections.
    let first = start.checked_next_multiple_of(page)?;
    let last = end - end % page;
    (first < last).then_some(first..last)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 4096;
    const BASE: usize = 0x5555_0000_0000;

    /// A PIE's segments: read-only data (headers, dynamic symbols, relocations), code, then the
    /// written data with the dynamic section.
    fn segments() -> Vec<Segment> {
        let load = |flags, vaddr, memsz| Segment {
            kind: PT_LOAD,
            flags,
            vaddr,
            memsz,
        };
        vec![
            Segment {
                kind: PT_PHDR,
                flags: 4,
                vaddr: 0x40,
                memsz: 0x300,
            },
            load(4, 0, 0x40_0000),
            load(5, 0x40_1000, 0x100_0000),
            load(6, 0x140_2000, 0x8000),
        ]
    }

    fn dynamic(table: u64, size: u64) -> Vec<(i64, u64)> {
        vec![(DT_RELA, table), (DT_RELASZ, size), (DT_FLAGS, 8)]
    }

    #[test]
    fn whole_pages_inside_the_table_whether_the_loader_rewrote_its_address_or_not() {
        let expected = Some(BASE + 0x2000..BASE + 0x30_0000);
        // The table from 0x1c48 to 0x30_0c48: its first and last pages hold other sections.
        for table in [0x1c48, BASE as u64 + 0x1c48] {
            assert_eq!(
                relocation_pages(BASE, &segments(), &dynamic(table, 0x2f_f000), PAGE),
                expected,
                "table at {table:#x}"
            );
        }
    }

    #[test]
    fn a_table_in_written_memory_or_outside_every_segment_is_left_alone() {
        // In the data segment (written at start).
        let written = dynamic(0x140_2000, 0x4000);
        assert_eq!(relocation_pages(BASE, &segments(), &written, PAGE), None);
        // Running over the end of the read-only segment.
        let over = dynamic(0x3f_0000, 0x2_0000);
        assert_eq!(relocation_pages(BASE, &segments(), &over, PAGE), None);
        // Outside every segment.
        let nowhere = dynamic(0x900_0000, 0x2000);
        assert_eq!(relocation_pages(BASE, &segments(), &nowhere, PAGE), None);
    }

    #[test]
    fn text_relocations_a_missing_tag_or_less_than_a_page_keep_the_table() {
        let mut textrel = dynamic(0x1000, 0x10_0000);
        textrel.push((DT_TEXTREL, 0));
        assert_eq!(relocation_pages(BASE, &segments(), &textrel, PAGE), None);
        let flagged = vec![(DT_RELA, 0x1000), (DT_RELASZ, 0x10_0000), (DT_FLAGS, 4)];
        assert_eq!(relocation_pages(BASE, &segments(), &flagged, PAGE), None);
        assert_eq!(
            relocation_pages(BASE, &segments(), &[(DT_RELA, 0x1000)], PAGE),
            None
        );
        let small = dynamic(0x1c48, 0x1000);
        assert_eq!(relocation_pages(BASE, &segments(), &small, PAGE), None);
    }

    /// Resident bytes of this process's mappings that overlap `range`, from /proc/self/smaps.
    fn resident_over(range: &Range<usize>) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let mut total = 0;
        let mut overlaps = false;
        for line in smaps.lines() {
            let head = line.split_whitespace().next().unwrap_or("");
            if let Some((from, to)) = head.split_once('-')
                && let (Ok(from), Ok(to)) = (
                    usize::from_str_radix(from, 16),
                    usize::from_str_radix(to, 16),
                )
            {
                overlaps = from < range.end && range.start < to;
            } else if overlaps && let Some(kb) = line.strip_prefix("Rss:") {
                total += kb
                    .trim()
                    .trim_end_matches(" kB")
                    .trim()
                    .parse::<usize>()
                    .unwrap()
                    * 1024;
            }
        }
        total
    }

    /// On this test binary itself (a PIE with relocations, like the app): the pages go, and the
    /// same bytes come back when read.
    #[test]
    fn the_test_binarys_own_relocations_are_dropped_and_read_back_unchanged() {
        let pages = own_relocation_pages().expect("this PIE's relocation pages");
        assert!(pages.end - pages.start >= PAGE, "{pages:x?}");
        // SAFETY: the range is mapped readable (checked above to be inside a loaded segment).
        let read = || unsafe {
            std::slice::from_raw_parts(pages.start as *const u8, pages.end - pages.start).to_vec()
        };
        let before = read();
        let resident = resident_over(&pages);
        let released = release();
        assert_eq!(released.relocations, Some(pages.clone()), "madvise failed");
        let after_drop = resident_over(&pages);
        assert!(
            after_drop + (pages.end - pages.start) <= resident,
            "resident {resident} bytes before, {after_drop} after dropping {} bytes",
            pages.end - pages.start
        );
        assert!(
            before == read(),
            "the pages read back differ from the file's"
        );
        assert!(resident_over(&pages) > after_drop);
    }
}
