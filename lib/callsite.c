/* SPDX-License-Identifier: MIT */
/*
 * callsite.c - stacks of return addresses, taken cheaply on the lock
 * paths, named at report time (callsite.h).
 *
 * Taking.  The first frame is the interposed call's own return address,
 * __builtin_return_address(0): always right, free.  Its callers come from
 * libgcc's DWARF unwinder, _Unwind_Backtrace, called directly: glibc's
 * backtrace() would dlopen libgcc_s at its first call, from inside a lock
 * call, and dlopen allocates and takes the loader's lock.  So libgcc_s is
 * loaded here, at load (the interposer's constructor may allocate), and
 * the lock paths only call into it.  The unwinder finds each frame's
 * unwind table through dl_iterate_phdr, whose lock (dl_load_write_lock)
 * is held only around changes of the list of loaded objects, never around
 * code of the program's; it allocates nothing and takes no lock of the
 * program's unless frames were registered with __register_frame* (JITs):
 * then it takes its own object_mutex (a pthread mutex, so ours) and
 * mallocs at its first search.  A lock taken from inside libgcc_s itself
 * (that object_mutex) gets its first frame only, never a walk: the walk
 * would take object_mutex again inside the unwinder that holds it.  A
 * process with registered frames, stats on, may still allocate on a lock
 * path at a lock's first contention (docs/design.md, Known limits).  Frame pointers are not
 * used: Debian builds without them, and a walk through %rbp there reads
 * whatever the register holds.  The walk stops after PLK_SITE_FRAMES + 8
 * frames, whatever it found: bounded work.  It is taken once per lock
 * (claimed by CAS) and only while stats are on.
 *
 * Naming.  At report time, which may be in a signal handler (report.c),
 * so with system calls only: /proc/self/maps says which file an address
 * lies in and at what file offset; the file, mapped read-only here, says
 * which symbol covers it (its .symtab if not stripped, else .dynsym).
 * Not dladdr: it takes the loader's lock, which a signal may have
 * interrupted (and it sees .dynsym only).  Mapped files are cached for
 * one report and unmapped after it.  The work is bounded where the
 * report asks (from a signal handler, report.c): the maps are indexed
 * once, each address is a binary search there, and only so many
 * addresses get a symbol-table search (a pass over a table that can
 * hold 10^5 symbols); the NAMED first are remembered, the rest, once
 * the searches run out, are "module+offset".
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unwind.h>

#include "callsite.h"

/* --- taking ---------------------------------------------------------- */

static _Unwind_Reason_Code (*unwind_backtrace_fn)(_Unwind_Trace_Fn, void *);
static _Unwind_Ptr (*unwind_get_ip)(struct _Unwind_Context *);
static bool unwind_ready;  /* both set (release) */
/* libgcc_s's loaded segments: a lock taken from there is one of the
 * unwinder's own (object_mutex, held around its search of registered
 * frames), which our walk would take again inside it. */
static uintptr_t libgcc_lo, libgcc_hi;

static int find_segments(struct dl_phdr_info *info, size_t size, void *base)
{
	(void)size;
	if (info->dlpi_addr != (ElfW(Addr))(uintptr_t)base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;

		if (ph->p_type != PT_LOAD)
			continue;
		if (!libgcc_lo || lo < libgcc_lo)
			libgcc_lo = lo;
		if (hi > libgcc_hi)
			libgcc_hi = hi;
	}
	return 1;
}

void plk_callsite_init(void)
{
	void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
	void *bt, *ip;
	Dl_info where;

	if (!h)
		return;  /* the first frame only */
	bt = dlsym(h, "_Unwind_Backtrace");
	ip = dlsym(h, "_Unwind_GetIP");
	if (!bt || !ip || !dladdr(bt, &where))
		return;
	dl_iterate_phdr(find_segments, where.dli_fbase);
	if (!libgcc_hi)
		return;
	/* POSIX makes dlsym's object pointer a function pointer. */
	memcpy(&unwind_get_ip, &ip, sizeof(ip));
	memcpy(&unwind_backtrace_fn, &bt, sizeof(bt));
	__atomic_store_n(&unwind_ready, true, __ATOMIC_RELEASE);
}

struct walk {
	uintptr_t ra, *pc;
	int n, steps;
	bool seen;  /* the frame of @ra reached: what follows is its callers */
};

static _Unwind_Reason_Code walk_step(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	uintptr_t ip = (uintptr_t)unwind_get_ip(ctx);

	if (++w->steps > PLK_SITE_FRAMES + 8 || ip == 0)
		return _URC_END_OF_STACK;
	if (!w->seen) {
		w->seen = ip == w->ra;  /* frames before it are the interposer's own */
		return _URC_NO_REASON;
	}
	w->pc[w->n++] = ip;
	return w->n == PLK_SITE_FRAMES ? _URC_END_OF_STACK : _URC_NO_REASON;
}

void plk_site_take(struct plk_site *s, uintptr_t ra)
{
	uintptr_t pc[PLK_SITE_FRAMES] = { ra };
	struct walk w = { .ra = ra, .pc = pc, .n = 1 };
	int unclaimed = 0;

	if (__atomic_load_n(&s->claimed, __ATOMIC_RELAXED) ||
	    !__atomic_compare_exchange_n(&s->claimed, &unclaimed, 1, 0, __ATOMIC_RELAXED,
	                                 __ATOMIC_RELAXED))
		return;
	if (__atomic_load_n(&unwind_ready, __ATOMIC_ACQUIRE) && (ra < libgcc_lo || ra >= libgcc_hi))
		unwind_backtrace_fn(walk_step, &w);
	for (int i = 0; i < PLK_SITE_FRAMES; i++)
		__atomic_store_n(&s->pc[i], i < w.n ? pc[i] : 0, __ATOMIC_RELAXED);
	/* Release: a report that sees ready reads the frames as written. */
	__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
}

/* --- naming ---------------------------------------------------------- */

#if __SIZEOF_POINTER__ == 8
#define NATIVE_CLASS ELFCLASS64
#else
#define NATIVE_CLASS ELFCLASS32
#endif
#define MAPS_MAX (4u << 20)  /* bytes of /proc/self/maps read at most */
#define FILES 8              /* files mapped at once for one report */
#define NAMED 128            /* names kept for addresses already named */

/* One line of /proc/self/maps: a file's mapping. */
struct range {
	uintptr_t lo, hi;
	uint64_t off;        /* the file offset at lo */
	const char *path;    /* into maps, '\n'-ended */
};

struct plk_symbols {
	char *maps;          /* /proc/self/maps, NUL-terminated */
	size_t maps_len;
	struct range *ranges;  /* its file mappings, by address (as the kernel lists them) */
	size_t nranges, ranges_bytes;
	unsigned searches;   /* symbol-table searches left; UINT_MAX: unbounded */
	unsigned long by_offset;  /* addresses named by module and offset: no search left */
	struct file {
		char path[256];
		const unsigned char *map;
		size_t len;
	} files[FILES];
	int nfiles;
	struct named {
		uintptr_t pc;
		char name[160];
	} named[NAMED];
	int nnamed;
};

static uintptr_t hex(const char **p)
{
	uintptr_t v = 0;

	for (;; (*p)++) {
		char c = **p;

		if (c >= '0' && c <= '9')
			v = v * 16 + (uintptr_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uintptr_t)(c - 'a' + 10);
		else
			return v;
	}
}

/* The maps text's lines that map a file, as ranges into @out (NULL:
 * counted only); their number. */
static size_t ranges_of(const char *maps, struct range *out)
{
	size_t n = 0;

	for (const char *line = maps; *line;) {
		const char *p = line, *end = strchr(line, '\n'), *path;
		struct range r;

		if (!end)
			end = line + strlen(line);
		r.lo = hex(&p);
		p++;
		r.hi = hex(&p);
		/* perms, then the offset */
		while (p < end && *p == ' ')
			p++;
		while (p < end && *p != ' ')
			p++;
		while (p < end && *p == ' ')
			p++;
		r.off = hex(&p);
		if ((path = memchr(p, '/', (size_t)(end - p)))) {
			r.path = path;
			if (out)
				out[n] = r;
			n++;
		}
		line = *end ? end + 1 : end;
	}
	return n;
}

struct plk_symbols *plk_symbols_open(unsigned searches)
{
	struct plk_symbols *sy = mmap(NULL, MAPS_MAX, PROT_READ | PROT_WRITE,
	                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	size_t n = 0;
	int fd;

	if (sy == MAP_FAILED)
		return NULL;
	sy->maps = (char *)(sy + 1);
	sy->searches = searches ? searches : UINT_MAX;
	if ((fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)) < 0) {
		munmap(sy, MAPS_MAX);
		return NULL;
	}
	for (;;) {
		size_t room = MAPS_MAX - sizeof(*sy) - 1 - n;
		ssize_t r = room ? read(fd, sy->maps + n, room) : 0;

		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	sy->maps[n] = 0;
	sy->maps_len = n;
	/* Indexed once: each address is then a binary search, not a pass
	 * over the text (a report from a signal is bounded work). */
	sy->ranges_bytes = (ranges_of(sy->maps, NULL) + 1) * sizeof(struct range);
	sy->ranges = mmap(NULL, sy->ranges_bytes, PROT_READ | PROT_WRITE,
	                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sy->ranges == MAP_FAILED)
		sy->ranges = NULL;
	else
		sy->nranges = ranges_of(sy->maps, sy->ranges);
	return sy;
}

void plk_symbols_close(struct plk_symbols *sy)
{
	if (!sy)
		return;
	for (int i = 0; i < sy->nfiles; i++)
		if (sy->files[i].map)
			munmap((void *)sy->files[i].map, sy->files[i].len);
	if (sy->ranges)
		munmap(sy->ranges, sy->ranges_bytes);
	munmap(sy, MAPS_MAX);
}

unsigned long plk_symbols_by_offset(const struct plk_symbols *sy)
{
	return sy ? sy->by_offset : 0;
}

/* The file @pc lies in, into @path, and its offset there; false if none
 * (anonymous memory, or not in the maps read). */
static bool map_of(const struct plk_symbols *sy, uintptr_t pc, char *path, size_t len,
                   uint64_t *off)
{
	size_t lo = 0, hi = sy->nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct range *r = &sy->ranges[mid];

		if (pc < r->lo) {
			hi = mid;
		} else if (pc >= r->hi) {
			lo = mid + 1;
		} else {
			const char *end = strchr(r->path, '\n');
			size_t n = end ? (size_t)(end - r->path) : strlen(r->path);

			if (n >= len)
				return false;
			memcpy(path, r->path, n);
			path[n] = 0;
			*off = pc - r->lo + r->off;
			return true;
		}
	}
	return false;
}

/* @path mapped read-only (cached); NULL if it cannot be. */
static const struct file *file_of(struct plk_symbols *sy, const char *path)
{
	struct file *f;
	struct stat st;
	void *map;
	int fd;

	for (int i = 0; i < sy->nfiles; i++)
		if (strcmp(sy->files[i].path, path) == 0)
			return sy->files[i].map ? &sy->files[i] : NULL;
	if (sy->nfiles == FILES) {  /* full: the oldest goes */
		if (sy->files[0].map)
			munmap((void *)sy->files[0].map, sy->files[0].len);
		memmove(&sy->files[0], &sy->files[1], sizeof(sy->files[0]) * (FILES - 1));
		sy->nfiles--;
	}
	f = &sy->files[sy->nfiles++];
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->map = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(ElfW(Ehdr)) &&
	    (map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) != MAP_FAILED) {
		f->map = map;
		f->len = (size_t)st.st_size;
	}
	close(fd);
	return f->map ? f : NULL;
}

/* Whether [off, off + n) lies in @f. */
static bool within(const struct file *f, uint64_t off, uint64_t n)
{
	return off <= f->len && n <= f->len - off;
}

/*
 * The function of @f covering file offset @off: its name and start
 * (a virtual address of the file), or NULL; *@vaddr gets @off's own.
 */
static const char *symbol_of(const struct file *f, uint64_t off, uint64_t *vaddr,
                             uint64_t *start)
{
	const ElfW(Ehdr) *eh = (const void *)f->map;
	const ElfW(Shdr) *sh;
	const char *best = NULL;
	bool have_vaddr = false;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != NATIVE_CLASS ||
	    !within(f, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr))) ||
	    !within(f, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr))))
		return NULL;
	for (int i = 0; i < eh->e_phnum && !have_vaddr; i++) {
		const ElfW(Phdr) *ph = (const void *)(f->map + eh->e_phoff + (size_t)i * sizeof(*ph));

		if (ph->p_type == PT_LOAD && off >= ph->p_offset && off < ph->p_offset + ph->p_filesz) {
			*vaddr = off - ph->p_offset + ph->p_vaddr;
			have_vaddr = true;
		}
	}
	if (!have_vaddr)
		return NULL;
	sh = (const void *)(f->map + eh->e_shoff);
	/* .symtab where the file keeps one, else .dynsym. */
	for (int pass = 0; pass < 2 && !best; pass++)
		for (int i = 0; i < eh->e_shnum && !best; i++) {
			const ElfW(Shdr) *st = &sh[i], *str;
			uint64_t v = *vaddr - 1;  /* inside the call, not after it */

			if (st->sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) || st->sh_link >= eh->e_shnum ||
			    st->sh_entsize != sizeof(ElfW(Sym)) || !within(f, st->sh_offset, st->sh_size))
				continue;
			str = &sh[st->sh_link];
			if (!within(f, str->sh_offset, str->sh_size))
				continue;
			for (uint64_t k = 0; k < st->sh_size / sizeof(ElfW(Sym)); k++) {
				const ElfW(Sym) *sym = (const void *)(f->map + st->sh_offset + k * sizeof(*sym));
				int type = ELF64_ST_TYPE(sym->st_info);

				if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym->st_shndx == SHN_UNDEF ||
				    v < sym->st_value || v - sym->st_value >= (sym->st_size ? sym->st_size : 1) ||
				    sym->st_name >= str->sh_size ||
				    !memchr(f->map + str->sh_offset + sym->st_name, 0, str->sh_size - sym->st_name))
					continue;
				best = (const char *)f->map + str->sh_offset + sym->st_name;
				*start = sym->st_value;
				break;
			}
		}
	return best;
}

void plk_symbol_name(struct plk_symbols *sy, uintptr_t pc, char *buf, size_t len)
{
	char path[256];
	const struct file *f = NULL;
	const char *module, *name = NULL;
	uint64_t off, vaddr = 0, start = 0;

	if (!sy || !map_of(sy, pc, path, sizeof(path), &off)) {
		snprintf(buf, len, "%#lx", (unsigned long)pc);
		return;
	}
	for (int i = 0; i < sy->nnamed; i++)
		if (sy->named[i].pc == pc) {
			snprintf(buf, len, "%s", sy->named[i].name);
			return;
		}
	module = strrchr(path, '/') + 1;
	if (!sy->searches) {
		sy->by_offset++;
		snprintf(buf, len, "%s+%#llx", module, (unsigned long long)off);
		return;
	}
	if (sy->searches != UINT_MAX)
		sy->searches--;
	if ((f = file_of(sy, path)))
		name = symbol_of(f, off, &vaddr, &start);
	if (name && *name)
		snprintf(buf, len, "%s!%s+%#llx", module, name, (unsigned long long)(vaddr - start));
	else
		snprintf(buf, len, "%s+%#llx", module, (unsigned long long)(f && vaddr ? vaddr : off));
	if (sy->nnamed < NAMED) {
		sy->named[sy->nnamed].pc = pc;
		snprintf(sy->named[sy->nnamed++].name, sizeof(sy->named[0].name), "%s", buf);
	}
}
