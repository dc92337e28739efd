/*
 * kpack_tune.h - the tables of a tuning harness (docs/tuning.md): what
 * `kpack build --tuner FILE.c` generates for every kernel with a `tune:`
 * section, and what the fixed main, kpack_tune_main.c, reads to time every
 * built candidate at every shape of the grid.  The harness is the generated
 * file, kpack_tune_main.c and the package's static library, linked into one
 * program that `kpack tune` runs.
 *
 * Indices used throughout: a *combination* is a built combination of the
 * kernel's API constexprs that are not auto (the dtypes: one table each in
 * the tuning file); a *candidate* is one combination of the auto
 * constexprs' values (what tuning chooses); a *shape* is a point of the
 * grid, row-major over the key params (the last varies fastest), and
 * after the grid's shapes the *probe* shapes, row-major over the probe
 * values of each key (shape grid + p for probe p); a *variant* is the
 * launcher's build that ran: 1 the unaligned one of a kernel with unaligned
 * twins (kpack_tune_kernel.aligned), 0 its aligned one, and 0 for every
 * other kernel.  Param
 * values travel as int64_t in one array indexed by the kernel's param
 * order (pointer params' slots unused), and buffers as pointers in another
 * (scalar params' slots NULL).
 *
 * C11.  Not a public API: generated code and kpack_tune_main.c share it,
 * both from the same kpack.
 */
#ifndef KPACK_TUNE_H
#define KPACK_TUNE_H

#include <stdint.h>

#include "kpack.h"

/* Bumped with every change of the layout below: the generated file checks
   it at compile time. */
#define KPACK_TUNE_ABI 3

/* How a buffer is filled before timing (the manifest's `fill:`). */
typedef enum kpack_tune_fill_kind {
  KPACK_TUNE_FILL_DEFAULT = 0, /* random for float elements, zero for integers */
  KPACK_TUNE_FILL_RANDOM = 1,  /* floats uniform in [-1, 1); integers random bits */
  KPACK_TUNE_FILL_ZERO = 2,
  KPACK_TUNE_FILL_RANGE = 3,   /* integers uniform in [lo, hi) */
  KPACK_TUNE_FILL_VALUE = 4,   /* every element `value` */
  KPACK_TUNE_FILL_STEP = 5     /* element i is i * value */
} kpack_tune_fill_kind;

/* A pointer param's buffer, as the manifest describes it. */
typedef struct kpack_tune_buffer {
  const char *param;         /* the pointer param's name */
  int param_index;           /* its position among the kernel's params */
  kpack_tune_fill_kind fill;
  /* 1 when the param is `divisibility: auto` and the kernel has unaligned
     twins (kpack_tune_kernel.aligned): its twin passes the buffer one
     element past its allocation's start, its contents moved along. */
  int twin_offset;
} kpack_tune_buffer;

/* One buffer at one shape: what the count and fill expressions gave. */
typedef struct kpack_tune_fill_at {
  int64_t count;  /* elements */
  int64_t lo, hi; /* KPACK_TUNE_FILL_RANGE */
  int64_t value;  /* KPACK_TUNE_FILL_VALUE and _STEP */
} kpack_tune_fill_at;

#define KPACK_TUNE_BOOL ((kpack_dtype)13)

/* The attributes of the tuning device that expressions may read
   (`device.NAME`), in expr.h's DeviceAttributeNames() order. */
#define KPACK_TUNE_DEVICE_NUM_SMS 0
#define KPACK_TUNE_DEVICE_SM 1
#define KPACK_TUNE_DEVICE_MAX_SHARED_MEM 2
#define KPACK_TUNE_DEVICE_L2_BYTES 3
#define KPACK_TUNE_DEVICE_COUNT 4

/*
 * The generated functions of one kernel.  Those returning int give 0 on
 * success and -1 when an expression failed (division by zero, overflow,
 * log2 of a value <= 0, a value its param's C type cannot hold, a negative
 * count), with *what set to a sentence naming the expression (static
 * storage).  `device` holds KPACK_TUNE_DEVICE_COUNT attributes.
 */
typedef struct kpack_tune_kernel {
  const char *name;          /* the manifest's kernel name */
  const char *dispatcher;    /* "<prefix>_<kernel>", which launch calls */
  const char *manifest_hash; /* TuneManifestHash when the tuner was built */
  int num_params;            /* the kernel's params (slots of values/ptrs) */
  int num_keys;
  const char *const *key_names;  /* [num_keys], in `key:` order */
  const int *key_params;         /* [num_keys]: their param indices */
  const int *grid_sizes;         /* [num_keys]: values per axis */
  const int64_t *const *grid;    /* [num_keys][grid_sizes[i]]: ascending */
  /* The probe shapes' values between the grid's (tune_probe.h), per key
     ascending; a key without any (no integer between its grid values)
     has size 0 and a NULL row, and then there are no probe shapes.  Probe
     p < the product of probe_sizes is row-major over them, the last key
     fastest, and its shape index is (the grid's shapes) + p. */
  const int *probe_sizes;          /* [num_keys] */
  const int64_t *const *probes;    /* [num_keys][probe_sizes[i]] */
  int num_tuned;
  const char *const *tuned;      /* the auto constexprs, in constexpr order */
  int num_combos;
  const char *const *combos;     /* labels, "T=f16" ("" when none) */
  int num_candidates;
  const char *const *candidates; /* labels, "BLOCK=256 num_warps=4" */
  const unsigned char *built;    /* [combo * num_candidates + candidate] */
  int num_buffers;
  const kpack_tune_buffer *buffers;
  /* [combo * num_buffers + buffer]: the element type; KPACK_TUNE_BOOL for
     bool elements (0 or 1, one byte), which kpack_dtype has no name for. */
  const kpack_dtype *elements;

  /* Every scalar param's value at the shape whose key values are `key`
     (the keys themselves and the tune: params) into values[num_params]. */
  int (*params)(int combo, const int64_t *key, const int64_t *device, int64_t *values,
                const char **what);
  /* Each buffer's count and fill parameters, given the params' values. */
  int (*fills)(int combo, const int64_t *values, const int64_t *device, kpack_tune_fill_at *out,
               const char **what);
  /* 1 where candidate may run at these values (`valid:`), 0 where not, -1
     on failure (with *what). */
  int (*valid)(int combo, int candidate, const int64_t *values, const int64_t *device,
               const char **what);
  /* Launches the candidate through the package's dispatcher,
     <prefix>_<kernel>(stream, constexprs..., params...), on `stream`. */
  kpack_status (*launch)(int combo, int candidate, const int64_t *values, void *const *ptrs,
                         kpack_stream stream);
  /* Launches through the auto dispatcher, <prefix>_<kernel>_auto(stream,
     the combination's constexprs, params...): what the library's tables
     (or rules) pick, timed by --eval against every candidate. */
  kpack_status (*launch_auto)(int combo, const int64_t *values, void *const *ptrs, kpack_stream stream);
  /* NULL unless the harness times unaligned twins: the launcher picks an
     aligned variant and a `divisibility: auto` param is a pointer.  1 when
     the launcher would run its aligned variant at these params and buffers
     (its own test: every `divisibility: auto` value a multiple of 16, every
     `equal_to_1: auto` param 1), else 0.  Where the as-is launch ran the
     aligned variant, the harness times the shape again with the twin_offset
     buffers one element off (variant 1). */
  int (*aligned)(const int64_t *values, void *const *ptrs);
} kpack_tune_kernel;

/* The whole harness: the package and its kernels with `tune:`. */
typedef struct kpack_tune_package {
  int abi;                   /* KPACK_TUNE_ABI */
  const char *package;       /* the package's name */
  const char *kpack_version; /* the kpack that generated the tables */
  int num_kernels;
  const kpack_tune_kernel *kernels;
} kpack_tune_package;

/* Defined by the generated file, read by kpack_tune_main.c. */
extern const kpack_tune_package kpack_tune_tables;

/* A float as an IEEE binary16 or bfloat16, rounded to nearest even: the
   generated launch functions pass a tune value (an integer) to a half or
   bfloat16 scalar param through them, and the harness fills buffers. */
static inline uint16_t kpack_tune_f16_bits(float f) {
  union { float f; uint32_t u; } in = {f};
  uint32_t sign = (in.u >> 16) & 0x8000u, abs = in.u & 0x7fffffffu;
  if (abs > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);   /* NaN */
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  /* rounds to infinity */
  if (abs < 0x38800000u) {                                    /* subnormal half, or 0 */
    if (abs < 0x33000000u) return (uint16_t)sign;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u, shift = 126u - (abs >> 23);
    uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
    if (rest > mid || (rest == mid && (half & 1u))) ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t rounded = abs + 0x0fffu + ((abs >> 13) & 1u);
  return (uint16_t)(sign | ((rounded - 0x38000000u) >> 13));
}

static inline uint16_t kpack_tune_bf16_bits(float f) {
  union { float f; uint32_t u; } in = {f};
  if ((in.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((in.u >> 16) | 0x40u); /* NaN */
  return (uint16_t)((in.u + 0x7fffu + ((in.u >> 16) & 1u)) >> 16);
}

static inline kpack_f16 kpack_tune_to_f16(int64_t v) {
  kpack_f16 out;
  out.bits = kpack_tune_f16_bits((float)v);
  return out;
}

static inline kpack_bf16 kpack_tune_to_bf16(int64_t v) {
  kpack_bf16 out;
  out.bits = kpack_tune_bf16_bits((float)v);
  return out;
}

#endif /* KPACK_TUNE_H */
