/*
 * runtime_private.h - what the runtime's sources share besides the driver
 * (driver.h) and the thread's last error (errors.h): the device a call
 * applies to, and the hooks kpack_unload_all calls in workspace.c and
 * tensor_map.c.  Not installed.
 */
#ifndef KPACK_RUNTIME_PRIVATE_H
#define KPACK_RUNTIME_PRIVATE_H

#include "driver.h"
#include "kpack.h"

/*
 * Finds the driver (loading it on first use) into *d and the device a call
 * applies to into *dev: with `take_hint`, the thread's one-shot device hint
 * if one is set (and clears it), else the current context's
 * (cuCtxGetDevice).  `who` starts the detail of a failure: the driver
 * load's statuses, KPACK_ERROR_NO_CONTEXT, KPACK_ERROR_DRIVER or
 * KPACK_ERROR_INTERNAL (an ordinal beyond KPACK_MAX_DEVICES).
 * (kpack_runtime.c)
 */
kpack_status kpack_rt_driver_and_device(const char *who, int take_hint, const kpack_driver **d,
                                        CUdevice *dev);

/* Leaves `dev` as the calling thread's one-shot device hint, for its next
   launch (kpack_internal.h, kpack_tuning_select).  (kpack_runtime.c) */
void kpack_rt_set_device_hint(CUdevice dev);

/*
 * For kpack_unload_all, with no other thread in the runtime: frees every
 * runtime workspace with cuMemFree of driver `d` (NULL: none is loaded, so
 * there is nothing to free), forgets every workspace, the caller's too, and
 * zeroes the usage.  Returns KPACK_SUCCESS or the status of the first
 * failure, whose detail and CUresult it records only when `report` is set
 * (kpack_unload_all reports its first failure, which may have come
 * before); everything is forgotten either way.  (workspace.c)
 */
kpack_status kpack_rt_workspaces_forget(const kpack_driver *d, int report);

/* For kpack_unload_all: invalidates every thread's tensor-map cache (the
   next driver may encode otherwise).  (tensor_map.c) */
void kpack_rt_tensor_maps_forget(void);

#endif /* KPACK_RUNTIME_PRIVATE_H */
