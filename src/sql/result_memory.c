/*
 * result_memory.c
 *	  The memory context of a large get_table() result (get.c): its tuples
 *	  are bumped out of big anonymous regions, which the backend keeps
 *	  (up to SPARE_KEEP bytes, for the kernel to take back when it needs
 *	  them) from one result to the next, so that the hundreds of megabytes
 *	  the typed rows of a large batch take are not faulted in (the kernel
 *	  zeroing every page) again for every batch.
 *
 * A chunk is its size and its context (the word before it, as every
 * PostgreSQL context's chunks have), then its bytes.  pfree() gives nothing
 * back (the result's tuples live until the query ends), repalloc() moves a
 * chunk that grows; reset and delete unmap every region.
 */
#include "sql/sql.h"

#include <sys/mman.h>

#include "utils/memutils.h"

/*
 * Regions of REGION_SIZE bytes (or one chunk's size, if larger); up to
 * SPARE_KEEP bytes of them are kept when a result ends, for the next.
 */
#define REGION_SIZE ((Size) 32 * 1024 * 1024)
#define SPARE_KEEP ((Size) 512 * 1024 * 1024)

typedef struct result_region
{
	struct result_region *next;
	Size		size;			/* mapped bytes, this header included */
} result_region;

typedef struct result_chunk
{
	Size		size;			/* usable bytes (MAXALIGNed) */
	MemoryContext context;		/* right before the chunk's bytes */
} result_chunk;

#define REGION_HDR MAXALIGN(sizeof(result_region))
#define CHUNK_HDR MAXALIGN(sizeof(result_chunk))
#define CHUNK_OF(p) ((result_chunk *) ((char *) (p) - CHUNK_HDR))

StaticAssertDecl(MAXALIGN(sizeof(result_chunk)) == sizeof(result_chunk),
				 "the context pointer must be right before a chunk's bytes");

typedef struct result_context
{
	MemoryContextData header;
	result_region *regions;
	char	   *free;			/* the first free byte of the newest region */
	char	   *end;			/* its end */
	Size		mapped;			/* bytes of all the regions */
	Size		used;			/* bytes of the chunks, headers included */
} result_context;

/*
 * The regions of ended results, kept for the next (backend-local): their
 * pages stay mapped, given to the kernel to take back when it runs short
 * of memory (MADV_FREE), so that a consumer calling get_table() in a loop
 * does not fault hundreds of megabytes in again for every batch.
 */
static result_region *spare = NULL;
static Size spare_bytes = 0;

/* A region of at least need bytes (a spare one if one fits); NULL if none. */
static result_region *
region_get(Size need)
{
	Size		size = Max(need, REGION_SIZE);
	char	   *p;

	result_region **best = NULL;

	/* the smallest spare that fits */
	for (result_region **pr = &spare; *pr; pr = &(*pr)->next)
		if ((*pr)->size >= need && (best == NULL || (*pr)->size < (*best)->size))
			best = pr;
	if (best)
	{
		result_region *r = *best;

		*best = r->next;
		spare_bytes -= r->size;
		return r;
	}
	size = TYPEALIGN(4096, size);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	((result_region *) p)->size = size;
	return (result_region *) p;
}

/* A region no result uses any more: kept as a spare, or unmapped. */
static void
region_put(result_region *r)
{
#ifdef MADV_FREE
	if (spare_bytes + r->size <= SPARE_KEEP &&
		madvise((char *) r + 4096, r->size - 4096, MADV_FREE) == 0)
	{
		r->next = spare;
		spare = r;
		spare_bytes += r->size;
		return;
	}
#endif
	(void) munmap(r, r->size);
}

static void *
result_alloc(MemoryContext context, Size size)
{
	result_context *rc = (result_context *) context;
	Size		need = CHUNK_HDR + MAXALIGN(size);
	result_chunk *c;

	if (rc->free == NULL || (Size) (rc->end - rc->free) < need)
	{
		result_region *r = region_get(REGION_HDR + need);

		if (r == NULL)
			return NULL;		/* palloc's out-of-memory error */
		r->next = rc->regions;
		rc->regions = r;
		rc->mapped += r->size;
		context->mem_allocated += r->size;
		rc->free = (char *) r + REGION_HDR;
		rc->end = (char *) r + r->size;
	}
	c = (result_chunk *) rc->free;
	c->size = MAXALIGN(size);
	c->context = context;
	rc->free += need;
	rc->used += need;
	return (char *) c + CHUNK_HDR;
}

static void
result_free(MemoryContext context, void *pointer)
{
	/* given back with the regions */
}

static void *
result_realloc(MemoryContext context, void *pointer, Size size)
{
	result_chunk *c = CHUNK_OF(pointer);
	void	   *p;

	if (size <= c->size)
		return pointer;
	p = result_alloc(context, size);
	if (p == NULL)
		return NULL;
	memcpy(p, pointer, c->size);
	return p;
}

static void
result_reset(MemoryContext context)
{
	result_context *rc = (result_context *) context;

	while (rc->regions)
	{
		result_region *r = rc->regions;

		rc->regions = r->next;
		region_put(r);
	}
	rc->free = rc->end = NULL;
	rc->mapped = rc->used = 0;
	context->mem_allocated = 0;
}

static void
result_delete(MemoryContext context)
{
	result_reset(context);
	free(context);
}

static Size
result_get_chunk_space(MemoryContext context, void *pointer)
{
	return CHUNK_OF(pointer)->size + CHUNK_HDR;
}

static bool
result_is_empty(MemoryContext context)
{
	return ((result_context *) context)->used == 0;
}

static void
result_stats(MemoryContext context, MemoryStatsPrintFunc printfunc, void *passthru,
			 MemoryContextCounters *totals, bool print_to_stderr)
{
	result_context *rc = (result_context *) context;
	int			nregions = 0;

	for (result_region *r = rc->regions; r; r = r->next)
		nregions++;
	if (printfunc)
	{
		char		stats[200];

		snprintf(stats, sizeof(stats), "%zu total in %d regions; %zu used",
				 rc->mapped, nregions, rc->used);
		printfunc(context, passthru, stats, print_to_stderr);
	}
	if (totals)
	{
		totals->nblocks += nregions;
		totals->totalspace += rc->mapped;
		totals->freespace += rc->mapped - rc->used;
	}
}

#ifdef MEMORY_CONTEXT_CHECKING
static void
result_check(MemoryContext context)
{
	result_context *rc = (result_context *) context;

	if (rc->used > rc->mapped)
		elog(WARNING, "problem in binlog_fdw result context %s: more used than mapped",
			 context->name);
}
#endif

static const MemoryContextMethods result_methods = {
	result_alloc,
	result_free,
	result_realloc,
	result_reset,
	result_delete,
	result_get_chunk_space,
	result_is_empty,
	result_stats
#ifdef MEMORY_CONTEXT_CHECKING
	,result_check
#endif
};

MemoryContext
blpg_result_context_create(MemoryContext parent, const char *name)
{
	result_context *rc = malloc(sizeof(result_context));

	if (rc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("Failed while creating memory context \"%s\".", name)));
	rc->regions = NULL;
	rc->free = rc->end = NULL;
	rc->mapped = rc->used = 0;
	/* (tagged as a generation context: the tags MemoryContextIsValid takes) */
	MemoryContextCreate((MemoryContext) rc, T_GenerationContext, &result_methods, parent, name);
	return (MemoryContext) rc;
}
