/* SPDX-License-Identifier: MIT */
/*
 * vipl.h -- the de facto VIA programming interface (VIPL), as implemented by
 * viaduct.  Names, numeric values and structure layouts follow the Intel /
 * M-VIA header and Giganet cLAN's "1.0" header so existing VIA programs
 * compile unchanged; both descriptor dialects compile (d->CS / d->DS[i] and
 * d->Control / d->Data[i]) and VIPL095 is accepted.  Written from the fact
 * sheet in docs/vipl.md; no vendor header was copied.
 *
 * Every function returns VIP_RETURN.  All functions are thread-safe
 * (VIP_NIC_ATTRIBUTES.ThreadSafe is VIP_TRUE).  Handles are opaque values
 * checked on every call: a stale or forged handle gives
 * VIP_INVALID_PARAMETER, never a crash.
 *
 * viaduct's own extensions (flow control, request splitting, statistics)
 * are declared in <viaduct/viaduct.h>; they never change the behaviour
 * described here.
 */
#ifndef VIPL_H
#define VIPL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Both macros are empty; they only annotate prototypes. */
#ifndef IN
#define IN
#endif
#ifndef OUT
#define OUT
#endif

/* ---- scalar types ------------------------------------------------------ */
typedef uint8_t VIP_UINT8;
typedef uint16_t VIP_UINT16;
typedef uint32_t VIP_UINT32;
typedef uint64_t VIP_UINT64;
typedef unsigned char VIP_UCHAR;
typedef char VIP_CHAR;
typedef unsigned short VIP_USHORT;
typedef unsigned long VIP_ULONG;
typedef short VIP_SHORT;          /* Giganet */
typedef long VIP_LONG;            /* Giganet */
typedef uint16_t VIP_WCHAR;       /* Giganet */
typedef int VIP_BOOLEAN;
typedef void *VIP_PVOID;
typedef void *VIP_QOS;
typedef void *VIP_EVENT_HANDLE;   /* Giganet */

#define VIP_TRUE 1
#define VIP_FALSE 0

/* Milliseconds; (VIP_ULONG)-1 is also treated as infinite. */
#define VIP_INFINITE 0xFFFFFFFFul

/* ---- handles ------------------------------------------------------------ */
typedef void *VIP_NIC_HANDLE;
typedef void *VIP_VI_HANDLE;
typedef void *VIP_CQ_HANDLE;
typedef void *VIP_PROTECTION_HANDLE;
typedef void *VIP_CONN_HANDLE;
/* A 32-bit value, carried in descriptors and sent to peers in messages. */
typedef VIP_UINT32 VIP_MEM_HANDLE;

/* ---- return codes ------------------------------------------------------- */
typedef enum {
	VIP_SUCCESS = 0,
	VIP_NOT_DONE = 1,
	VIP_INVALID_PARAMETER = 2,
	VIP_ERROR_RESOURCE = 3,
	VIP_TIMEOUT = 4,
	VIP_REJECT = 5,
	VIP_INVALID_RELIABILITY_LEVEL = 6,
	VIP_INVALID_MTU = 7,
	VIP_INVALID_QOS = 8,
	VIP_INVALID_PTAG = 9,
	VIP_INVALID_RDMAREAD = 10,
	VIP_DESCRIPTOR_ERROR = 11,
	VIP_INVALID_STATE = 12,
	VIP_ERROR_NAMESERVICE = 13,
	VIP_NO_MATCH = 14,
	/* Giganet extras */
	VIP_NOT_REACHABLE = 15,
	VIP_ERROR_NOT_SUPPORTED = 16,
	VIP_ERROR = 17
} VIP_RETURN;

/* ---- reliability levels (a VI holds one; the NIC reports a bitmask) ---- */
typedef VIP_USHORT VIP_RELIABILITY_LEVEL;
#define VIP_SERVICE_UNRELIABLE 0x1
#define VIP_SERVICE_RELIABLE_DELIVERY 0x2
#define VIP_SERVICE_RELIABLE_RECEPTION 0x4
#define VIP_BASE_SERVICES 0x7               /* Giganet (ANL copies) */
#define VIP_SERVICE_ACK (1 << 14)           /* Giganet; not supported */
#define VIP_SERVICE_DFC (1 << 15)           /* Giganet; not supported */

/* ---- enumerations -------------------------------------------------------- */
typedef enum {
	VIP_STATE_IDLE = 0,
	VIP_STATE_CONNECTED = 1,
	VIP_STATE_CONNECT_PENDING = 2,
	VIP_STATE_ERROR = 3
} VIP_VI_STATE;

typedef enum {
	VIP_RESOURCE_NIC = 0,
	VIP_RESOURCE_VI = 1,
	VIP_RESOURCE_CQ = 2,
	VIP_RESOURCE_DESCRIPTOR = 3
} VIP_RESOURCE_CODE;

typedef enum {
	VIP_ERROR_POST_DESC = 0,
	VIP_ERROR_CONN_LOST = 1,
	VIP_ERROR_RECVQ_EMPTY = 2,
	VIP_ERROR_VI_OVERRUN = 3,
	VIP_ERROR_RDMAW_PROT = 4,
	VIP_ERROR_RDMAW_DATA = 5,
	VIP_ERROR_RDMAW_ABORT = 6,
	VIP_ERROR_RDMAR_PROT = 7,
	VIP_ERROR_COMP_PROT = 8,
	VIP_ERROR_RDMA_TRANSPORT = 9,
	VIP_ERROR_CATASTROPHIC = 10
} VIP_ERROR_CODE;

#define VIP_DESCRIPTOR_ALIGNMENT 64
#define VIP_SMI_AUTODISCOVERY 1

/* ---- structures ----------------------------------------------------------- */

/* Host address bytes immediately followed by discriminator bytes;
 * allocate sizeof(VIP_NET_ADDRESS) + host + discriminator lengths. */
typedef struct {
	VIP_UINT16 HostAddressLen;
	VIP_UINT16 DiscriminatorLen;
	VIP_UINT8 HostAddress[1];
} VIP_NET_ADDRESS;

typedef struct {
	VIP_CHAR Name[64];
	VIP_ULONG HardwareVersion;
	VIP_ULONG ProviderVersion;
	VIP_UINT16 NicAddressLen;
	const VIP_UINT8 *LocalNicAddress;
	VIP_BOOLEAN ThreadSafe;
	VIP_UINT16 MaxDiscriminatorLen;
	VIP_ULONG MaxRegisterBytes;
	VIP_ULONG MaxRegisterRegions;
	VIP_ULONG MaxRegisterBlockBytes;
	VIP_ULONG MaxVI;
	VIP_ULONG MaxDescriptorsPerQueue;
	VIP_ULONG MaxSegmentsPerDesc;
	VIP_ULONG MaxCQ;
	VIP_ULONG MaxCQEntries;
	VIP_ULONG MaxTransferSize;
	VIP_ULONG NativeMTU;
	VIP_ULONG MaxPtags;
	VIP_RELIABILITY_LEVEL ReliabilityLevelSupport;
	VIP_RELIABILITY_LEVEL RDMAReadSupport;
} VIP_NIC_ATTRIBUTES;

typedef struct {
	VIP_RELIABILITY_LEVEL ReliabilityLevel;
	VIP_ULONG MaxTransferSize;
	VIP_QOS QoS;
	VIP_PROTECTION_HANDLE Ptag;
	VIP_BOOLEAN EnableRdmaWrite;
	VIP_BOOLEAN EnableRdmaRead;
} VIP_VI_ATTRIBUTES;

typedef struct {
	VIP_PROTECTION_HANDLE Ptag;
	VIP_BOOLEAN EnableRdmaWrite;
	VIP_BOOLEAN EnableRdmaRead;
} VIP_MEM_ATTRIBUTES;

struct _VIP_DESCRIPTOR;

/* The provider reads .Address (clients on 32-bit hosts set only that). */
typedef union {
	VIP_UINT64 AddressBits;
	void *Address;
	struct _VIP_DESCRIPTOR *Descriptor;   /* Giganet */
} VIP_PVOID64;

typedef struct {
	VIP_PVOID64 Next;            /* provider, while posted */
	VIP_MEM_HANDLE NextHandle;   /* provider */
	VIP_UINT16 SegCount;
	VIP_UINT16 Control;
	VIP_UINT32 Reserved;
	VIP_UINT32 ImmediateData;
	VIP_UINT32 Length;           /* send total; bytes received on receive */
	VIP_UINT32 Status;
} VIP_CONTROL_SEGMENT;

typedef struct {
	VIP_PVOID64 Data;            /* remote virtual address */
	VIP_MEM_HANDLE Handle;       /* remote memory handle */
	VIP_UINT32 Reserved;
} VIP_ADDRESS_SEGMENT;

typedef struct {
	VIP_PVOID64 Data;            /* local virtual address */
	VIP_MEM_HANDLE Handle;       /* local memory handle */
	VIP_UINT32 Length;
} VIP_DATA_SEGMENT;

typedef union {
	VIP_ADDRESS_SEGMENT Remote;
	VIP_DATA_SEGMENT Local;
} VIP_DESCRIPTOR_SEGMENT;

/* One control segment and SegCount 16-byte segments, 64-byte aligned, in
 * registered memory.  Both dialects name the same bytes. */
typedef struct _VIP_DESCRIPTOR {
	union {
		struct {                         /* Intel / M-VIA, VIPL095 */
			VIP_CONTROL_SEGMENT CS;
			VIP_DESCRIPTOR_SEGMENT DS[2];
		};
		struct {                         /* Giganet cLAN 1.0 */
			VIP_CONTROL_SEGMENT Control;
			VIP_DATA_SEGMENT Data[1];
		};
	};
} VIP_DESCRIPTOR;

/* Control bits. */
#define VIP_CONTROL_OP_SENDRECV 0x0
#define VIP_CONTROL_OP_RDMAWRITE 0x1
#define VIP_CONTROL_OP_RDMAREAD 0x2
#define VIP_CONTROL_OP_RESERVED 0x3
#define VIP_CONTROL_OP_MASK 0x3
#define VIP_CONTROL_IMMEDIATE 0x4
#define VIP_CONTROL_QFENCE 0x8
#define VIP_CONTROL_RESERVED 0xFFF0

/* Status bits (written at completion). */
#define VIP_STATUS_DONE 0x1
#define VIP_STATUS_FORMAT_ERROR 0x2
#define VIP_STATUS_PROTECTION_ERROR 0x4
#define VIP_STATUS_LENGTH_ERROR 0x8
#define VIP_STATUS_PARTIAL_ERROR 0x10
#define VIP_STATUS_DESC_FLUSHED_ERROR 0x20
#define VIP_STATUS_TRANSPORT_ERROR 0x40
#define VIP_STATUS_RDMA_PROT_ERROR 0x80
#define VIP_STATUS_REMOTE_DESC_ERROR 0x100
#define VIP_STATUS_ERROR_MASK 0x1FE
#define VIP_STATUS_OP_SEND 0x00000
#define VIP_STATUS_OP_RECEIVE 0x10000
#define VIP_STATUS_OP_RDMA_WRITE 0x20000
#define VIP_STATUS_OP_REMOTE_RDMA_WRITE 0x30000
#define VIP_STATUS_OP_RDMA_READ 0x40000
#define VIP_STATUS_OP_MASK 0x70000
#define VIP_STATUS_IMMEDIATE 0x80000
#define VIP_STATUS_RESERVED 0xFFF0FE00

typedef struct {
	VIP_NIC_HANDLE NicHandle;
	VIP_VI_HANDLE ViHandle;
	VIP_CQ_HANDLE CQHandle;
	VIP_DESCRIPTOR *DescriptorPtr;
	VIP_ULONG OpCode;
	VIP_RESOURCE_CODE ResourceCode;
	VIP_ERROR_CODE ErrorCode;
} VIP_ERROR_DESCRIPTOR;

typedef struct {
	VIP_ULONG NumberOfHops;
	VIP_NET_ADDRESS **ADAddrArray;
	VIP_ULONG NumAdAddrs;
} VIP_AUTODISCOVERY_LIST;

/* Giganet callback type names. */
typedef void (*VIP_ERROR_HANDLER)(VIP_PVOID Context, VIP_ERROR_DESCRIPTOR *Error);
typedef void (*VIP_VI_CALLBACK)(VIP_PVOID Context, VIP_NIC_HANDLE Nic,
				VIP_VI_HANDLE Vi, VIP_DESCRIPTOR *Descriptor);
typedef void (*VIP_CQ_CALLBACK)(VIP_PVOID Context, VIP_NIC_HANDLE Nic,
				VIP_VI_HANDLE Vi, VIP_BOOLEAN RecvQueue);

/* ---- NIC ------------------------------------------------------------------ */
VIP_RETURN VipOpenNic(IN const VIP_CHAR *DeviceName, OUT VIP_NIC_HANDLE *NicHandle);
VIP_RETURN VipCloseNic(IN VIP_NIC_HANDLE NicHandle);
VIP_RETURN VipQueryNic(IN VIP_NIC_HANDLE NicHandle, OUT VIP_NIC_ATTRIBUTES *Attrs);
VIP_RETURN VipRegisterMem(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID VirtualAddress,
			  IN VIP_ULONG Length, IN VIP_MEM_ATTRIBUTES *MemAttrs,
			  OUT VIP_MEM_HANDLE *MemHandle);
VIP_RETURN VipDeregisterMem(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID VirtualAddress,
			    IN VIP_MEM_HANDLE MemHandle);
VIP_RETURN VipQueryMem(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID VirtualAddress,
		       IN VIP_MEM_HANDLE MemHandle, OUT VIP_MEM_ATTRIBUTES *MemAttrs);
VIP_RETURN VipSetMemAttributes(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID VirtualAddress,
			       IN VIP_MEM_HANDLE MemHandle, IN VIP_MEM_ATTRIBUTES *MemAttrs);
VIP_RETURN VipErrorCallback(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID Context,
			    IN void (*Handler)(VIP_PVOID Context, VIP_ERROR_DESCRIPTOR *Error));
VIP_RETURN VipQuerySystemManagementInfo(IN VIP_NIC_HANDLE NicHandle, IN VIP_ULONG InfoType,
					OUT VIP_PVOID SysManInfo);
VIP_RETURN VipCreatePtag(IN VIP_NIC_HANDLE NicHandle, OUT VIP_PROTECTION_HANDLE *Ptag);
VIP_RETURN VipDestroyPtag(IN VIP_NIC_HANDLE NicHandle, IN VIP_PROTECTION_HANDLE Ptag);

/* ---- VI ------------------------------------------------------------------- */
VIP_RETURN VipCreateVi(IN VIP_NIC_HANDLE NicHandle, IN VIP_VI_ATTRIBUTES *ViAttribs,
		       IN VIP_CQ_HANDLE SendCQHandle, IN VIP_CQ_HANDLE RecvCQHandle,
		       OUT VIP_VI_HANDLE *ViHandle);
VIP_RETURN VipDestroyVi(IN VIP_VI_HANDLE ViHandle);
VIP_RETURN VipQueryVi(IN VIP_VI_HANDLE ViHandle, OUT VIP_VI_STATE *State,
		      OUT VIP_VI_ATTRIBUTES *Attrs, OUT VIP_BOOLEAN *SendQueueEmpty,
		      OUT VIP_BOOLEAN *RecvQueueEmpty);
VIP_RETURN VipSetViAttributes(IN VIP_VI_HANDLE ViHandle, IN VIP_VI_ATTRIBUTES *Attrs);

/* ---- data transfer -------------------------------------------------------- */
VIP_RETURN VipPostSend(IN VIP_VI_HANDLE ViHandle, IN VIP_DESCRIPTOR *DescriptorPtr,
		       IN VIP_MEM_HANDLE MemoryHandle);
VIP_RETURN VipSendDone(IN VIP_VI_HANDLE ViHandle, OUT VIP_DESCRIPTOR **DescriptorPtr);
VIP_RETURN VipSendWait(IN VIP_VI_HANDLE ViHandle, IN VIP_ULONG Timeout,
		       OUT VIP_DESCRIPTOR **DescriptorPtr);
VIP_RETURN VipSendNotify(IN VIP_VI_HANDLE ViHandle, IN VIP_PVOID Context,
			 IN void (*Handler)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle,
					    VIP_VI_HANDLE ViHandle,
					    VIP_DESCRIPTOR *DescriptorPtr));
VIP_RETURN VipPostRecv(IN VIP_VI_HANDLE ViHandle, IN VIP_DESCRIPTOR *DescriptorPtr,
		       IN VIP_MEM_HANDLE MemoryHandle);
VIP_RETURN VipRecvDone(IN VIP_VI_HANDLE ViHandle, OUT VIP_DESCRIPTOR **DescriptorPtr);
VIP_RETURN VipRecvWait(IN VIP_VI_HANDLE ViHandle, IN VIP_ULONG Timeout,
		       OUT VIP_DESCRIPTOR **DescriptorPtr);
VIP_RETURN VipRecvNotify(IN VIP_VI_HANDLE ViHandle, IN VIP_PVOID Context,
			 IN void (*Handler)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle,
					    VIP_VI_HANDLE ViHandle,
					    VIP_DESCRIPTOR *DescriptorPtr));

/* ---- connections ---------------------------------------------------------- */
VIP_RETURN VipConnectWait(IN VIP_NIC_HANDLE NicHandle, IN VIP_NET_ADDRESS *LocalAddr,
			  IN VIP_ULONG Timeout, OUT VIP_NET_ADDRESS *RemoteAddr,
			  OUT VIP_VI_ATTRIBUTES *RemoteViAttribs,
			  OUT VIP_CONN_HANDLE *ConnHandle);
VIP_RETURN VipConnectAccept(IN VIP_CONN_HANDLE ConnHandle, IN VIP_VI_HANDLE ViHandle);
VIP_RETURN VipConnectReject(IN VIP_CONN_HANDLE ConnHandle);
VIP_RETURN VipConnectRequest(IN VIP_VI_HANDLE ViHandle, IN VIP_NET_ADDRESS *LocalAddr,
			     IN VIP_NET_ADDRESS *RemoteAddr, IN VIP_ULONG Timeout,
			     OUT VIP_VI_ATTRIBUTES *RemoteViAttribs);
VIP_RETURN VipDisconnect(IN VIP_VI_HANDLE ViHandle);
VIP_RETURN VipConnectPeerRequest(IN VIP_VI_HANDLE ViHandle, IN VIP_NET_ADDRESS *LocalAddr,
				 IN VIP_NET_ADDRESS *RemoteAddr, IN VIP_ULONG Timeout);
VIP_RETURN VipConnectPeerDone(IN VIP_VI_HANDLE ViHandle,
			      OUT VIP_VI_ATTRIBUTES *RemoteViAttribs);
VIP_RETURN VipConnectPeerWait(IN VIP_VI_HANDLE ViHandle,
			      OUT VIP_VI_ATTRIBUTES *RemoteViAttribs);

/* ---- completion queues ---------------------------------------------------- */
VIP_RETURN VipCreateCQ(IN VIP_NIC_HANDLE NicHandle, IN VIP_ULONG EntryCount,
		       OUT VIP_CQ_HANDLE *CQHandle);
VIP_RETURN VipDestroyCQ(IN VIP_CQ_HANDLE CQHandle);
VIP_RETURN VipResizeCQ(IN VIP_CQ_HANDLE CQHandle, IN VIP_ULONG EntryCount);
VIP_RETURN VipCQDone(IN VIP_CQ_HANDLE CQHandle, OUT VIP_VI_HANDLE *ViHandle,
		     OUT VIP_BOOLEAN *RecvQueue);
VIP_RETURN VipCQWait(IN VIP_CQ_HANDLE CQHandle, IN VIP_ULONG Timeout,
		     OUT VIP_VI_HANDLE *ViHandle, OUT VIP_BOOLEAN *RecvQueue);
VIP_RETURN VipCQNotify(IN VIP_CQ_HANDLE CQHandle, IN VIP_PVOID Context,
		       IN void (*Handler)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle,
					  VIP_VI_HANDLE ViHandle, VIP_BOOLEAN RecvQueue));

/* ---- name service --------------------------------------------------------- */
VIP_RETURN VipNSInit(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID NSInitInfo);
VIP_RETURN VipNSGetHostByName(IN VIP_NIC_HANDLE NicHandle, IN VIP_CHAR *Name,
			      OUT VIP_NET_ADDRESS *VipAddress, IN VIP_ULONG NameIndex);
VIP_RETURN VipNSGetHostByAddr(IN VIP_NIC_HANDLE NicHandle, IN VIP_NET_ADDRESS *VipAddress,
			      OUT VIP_CHAR *Name, IN OUT VIP_ULONG *NameLen);
VIP_RETURN VipNSShutdown(IN VIP_NIC_HANDLE NicHandle);

/* ---- Giganet extras ----------------------------------------------------- */
/* Per-VI user pointer (ANL/MPICH copies of the cLAN header). */
VIP_PVOID VipGetUserData(IN VIP_VI_HANDLE ViHandle);
void VipSetUserData(IN VIP_VI_HANDLE ViHandle, IN VIP_PVOID Data);
/* Tagged CQ demultiplexing and deferred sends: VIP_ERROR_NOT_SUPPORTED. */
VIP_RETURN VipAddTagCQ(IN VIP_CQ_HANDLE CQHandle, IN OUT VIP_EVENT_HANDLE *Event,
		       IN VIP_ULONG Tag, IN VIP_ULONG Priority);
VIP_RETURN VipRemoveTagCQ(IN VIP_CQ_HANDLE CQHandle, IN VIP_EVENT_HANDLE Event,
			  IN VIP_ULONG Tag);
VIP_RETURN VipPostDeferredSends(IN VIP_VI_HANDLE ViHandle, IN VIP_BOOLEAN EnableInterrupt,
				IN OUT VIP_BOOLEAN *SendsDeferred);

#ifdef __cplusplus
}
#endif

/* viaduct extensions (declared there once VIPL_H is defined). */
#include <viaduct/viaduct.h>

#endif /* VIPL_H */
