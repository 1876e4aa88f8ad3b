/* dlpack.c: the release side of DLPack exports, in C.
 *
 * A capsule's destructor and a managed tensor's deleter can run while a Python
 * exception is pending (a consumer raising on an unsupported dtype drops the capsule
 * with the error set; a frame unwinding does too). Python-level callbacks cannot run in
 * that state, so these two small functions are C: they save and restore any pending
 * exception, take the GIL, and do nothing once the interpreter is gone.
 *
 * Contract with pytorchlite/_dlpack.py: the managed struct (with its shape/strides
 * arrays) is one PyMem_Malloc block, and manager_ctx is a strong reference to a Python
 * object that keeps the exported memory alive.
 */
#include <Python.h>
#include <stdint.h>

typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

static void release(void *block, void *ctx) {
    if (!Py_IsInitialized()) return; /* after finalisation: leak rather than crash */
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyMem_Free(block);
    Py_XDECREF((PyObject *)ctx);
    PyErr_Restore(type, value, tb);
    PyGILState_Release(g);
}

static void deleter_legacy(DLManagedTensor *self) { release(self, self->manager_ctx); }
static void deleter_versioned(DLManagedTensorVersioned *self) { release(self, self->manager_ctx); }

/* A capsule still carrying its original name was never consumed: release it here. A
 * consumer renames it to used_* and takes over the deleter call. */
static void destructor_legacy(PyObject *cap) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = (DLManagedTensor *)PyCapsule_GetPointer(cap, "dltensor");
        if (m && m->deleter) m->deleter(m);
    }
    PyErr_Restore(type, value, tb);
}

static void destructor_versioned(PyObject *cap) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m && m->deleter) m->deleter(m);
    }
    PyErr_Restore(type, value, tb);
}

/* 0: legacy capsule destructor, 1: legacy deleter, 2: versioned destructor, 3: versioned deleter */
intptr_t ptl_dlpack_hook(int which) {
    switch (which) {
        case 0: return (intptr_t)&destructor_legacy;
        case 1: return (intptr_t)&deleter_legacy;
        case 2: return (intptr_t)&destructor_versioned;
        case 3: return (intptr_t)&deleter_versioned;
        default: return 0;
    }
}
