/* SPDX-License-Identifier: MIT */
/*
 * mpi.h -- viaduct's MPI subset (MPI-3.1 names and semantics), a client of
 * VIPL.  Handles are ints, as in MPICH.  Functions outside the subset are
 * not declared: a program that calls one fails to link, never runs with a
 * wrong answer.  Build with `vdcc`, run with `vdrun -n N`.
 */
#ifndef VIADUCT_MPI_H
#define VIADUCT_MPI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPI_VERSION 3
#define MPI_SUBVERSION 1
#define VIADUCT_MPI 1

typedef int MPI_Comm;
typedef int MPI_Group;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Request;
typedef int MPI_Errhandler;
typedef long MPI_Aint;
typedef long long MPI_Offset;
typedef long long MPI_Count;
typedef int MPI_Info;
typedef int MPI_Fint;                   /* a Fortran INTEGER */
typedef int MPI_Message;
#define MPI_INFO_NULL ((MPI_Info)0)
typedef int MPI_Win;
#define MPI_INFO_ENV ((MPI_Info)1)

typedef struct MPI_Status {
	int MPI_SOURCE;
	int MPI_TAG;
	int MPI_ERROR;
	int vd_count_lo;        /* bytes received, low and high halves */
	int vd_count_hi_cancelled;
} MPI_Status;

typedef void MPI_User_function(void *invec, void *inoutvec, int *len,
			       MPI_Datatype *datatype);
typedef int MPI_Grequest_query_function(void *extra_state, MPI_Status *status);
typedef int MPI_Grequest_free_function(void *extra_state);
typedef int MPI_Grequest_cancel_function(void *extra_state, int complete);
typedef int MPI_Comm_copy_attr_function(MPI_Comm oldcomm, int comm_keyval, void *extra_state,
					void *attribute_val_in, void *attribute_val_out,
					int *flag);
typedef int MPI_Comm_delete_attr_function(MPI_Comm comm, int comm_keyval,
					  void *attribute_val, void *extra_state);
typedef int MPI_Type_copy_attr_function(MPI_Datatype oldtype, int type_keyval,
					void *extra_state, void *attribute_val_in,
					void *attribute_val_out, int *flag);
typedef int MPI_Type_delete_attr_function(MPI_Datatype datatype, int type_keyval,
					  void *attribute_val, void *extra_state);
typedef void MPI_Comm_errhandler_function(MPI_Comm *comm, int *error_code, ...);
typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;
typedef void MPI_Win_errhandler_function(MPI_Win *win, int *error_code, ...);
typedef MPI_Win_errhandler_function MPI_Win_errhandler_fn;
typedef int MPI_Win_copy_attr_function(MPI_Win oldwin, int win_keyval, void *extra_state,
				       void *attribute_val_in, void *attribute_val_out,
				       int *flag);
typedef int MPI_Win_delete_attr_function(MPI_Win win, int win_keyval, void *attribute_val,
					 void *extra_state);

/* ---- handles ---------------------------------------------------------- */
#define MPI_COMM_NULL ((MPI_Comm)0)
#define MPI_COMM_WORLD ((MPI_Comm)1)
#define MPI_COMM_SELF ((MPI_Comm)2)

#define MPI_GROUP_NULL ((MPI_Group)0)
#define MPI_GROUP_EMPTY ((MPI_Group)1)

#define MPI_REQUEST_NULL ((MPI_Request)0)

#define MPI_MESSAGE_NULL ((MPI_Message)0)
#define MPI_MESSAGE_NO_PROC ((MPI_Message)1)
#define MPI_WIN_NULL ((MPI_Win)0)

#define MPI_ERRHANDLER_NULL ((MPI_Errhandler)0)
#define MPI_ERRORS_ARE_FATAL ((MPI_Errhandler)1)
#define MPI_ERRORS_RETURN ((MPI_Errhandler)2)
#define MPI_ERRORS_ABORT ((MPI_Errhandler)3)

#define MPI_OP_NULL ((MPI_Op)0)
#define MPI_MAX ((MPI_Op)1)
#define MPI_MIN ((MPI_Op)2)
#define MPI_SUM ((MPI_Op)3)
#define MPI_PROD ((MPI_Op)4)
#define MPI_LAND ((MPI_Op)5)
#define MPI_BAND ((MPI_Op)6)
#define MPI_LOR ((MPI_Op)7)
#define MPI_BOR ((MPI_Op)8)
#define MPI_LXOR ((MPI_Op)9)
#define MPI_BXOR ((MPI_Op)10)
#define MPI_MAXLOC ((MPI_Op)11)
#define MPI_MINLOC ((MPI_Op)12)
#define MPI_REPLACE ((MPI_Op)13)
#define MPI_NO_OP ((MPI_Op)14)

/* Predefined datatypes: 1..63 (vd_dtype_builtin in the library). */
#define MPI_DATATYPE_NULL ((MPI_Datatype)0)
#define MPI_CHAR ((MPI_Datatype)1)
#define MPI_SIGNED_CHAR ((MPI_Datatype)2)
#define MPI_UNSIGNED_CHAR ((MPI_Datatype)3)
#define MPI_BYTE ((MPI_Datatype)4)
#define MPI_WCHAR ((MPI_Datatype)5)
#define MPI_SHORT ((MPI_Datatype)6)
#define MPI_UNSIGNED_SHORT ((MPI_Datatype)7)
#define MPI_INT ((MPI_Datatype)8)
#define MPI_UNSIGNED ((MPI_Datatype)9)
#define MPI_LONG ((MPI_Datatype)10)
#define MPI_UNSIGNED_LONG ((MPI_Datatype)11)
#define MPI_LONG_LONG_INT ((MPI_Datatype)12)
#define MPI_LONG_LONG MPI_LONG_LONG_INT
#define MPI_UNSIGNED_LONG_LONG ((MPI_Datatype)13)
#define MPI_FLOAT ((MPI_Datatype)14)
#define MPI_DOUBLE ((MPI_Datatype)15)
#define MPI_LONG_DOUBLE ((MPI_Datatype)16)
#define MPI_C_BOOL ((MPI_Datatype)17)
#define MPI_INT8_T ((MPI_Datatype)18)
#define MPI_INT16_T ((MPI_Datatype)19)
#define MPI_INT32_T ((MPI_Datatype)20)
#define MPI_INT64_T ((MPI_Datatype)21)
#define MPI_UINT8_T ((MPI_Datatype)22)
#define MPI_UINT16_T ((MPI_Datatype)23)
#define MPI_UINT32_T ((MPI_Datatype)24)
#define MPI_UINT64_T ((MPI_Datatype)25)
#define MPI_AINT ((MPI_Datatype)26)
#define MPI_OFFSET ((MPI_Datatype)27)
#define MPI_COUNT ((MPI_Datatype)28)
#define MPI_PACKED ((MPI_Datatype)29)
#define MPI_C_FLOAT_COMPLEX ((MPI_Datatype)30)
#define MPI_C_COMPLEX MPI_C_FLOAT_COMPLEX
#define MPI_C_DOUBLE_COMPLEX ((MPI_Datatype)31)
#define MPI_C_LONG_DOUBLE_COMPLEX ((MPI_Datatype)32)
/* C++'s bool and std::complex<T>, laid out as C's _Bool and T _Complex
 * on every ABI viaduct builds for (usable from C too, as the standard
 * has it). */
#define MPI_CXX_BOOL ((MPI_Datatype)33)
#define MPI_CXX_FLOAT_COMPLEX ((MPI_Datatype)34)
#define MPI_CXX_DOUBLE_COMPLEX ((MPI_Datatype)35)
#define MPI_CXX_LONG_DOUBLE_COMPLEX ((MPI_Datatype)36)
/* pair types for MPI_MAXLOC / MPI_MINLOC */
#define MPI_FLOAT_INT ((MPI_Datatype)40)
#define MPI_DOUBLE_INT ((MPI_Datatype)41)
#define MPI_LONG_INT ((MPI_Datatype)42)
#define MPI_2INT ((MPI_Datatype)43)
#define MPI_SHORT_INT ((MPI_Datatype)44)
#define MPI_LONG_DOUBLE_INT ((MPI_Datatype)45)
/* Fortran's types (usable from C too); MPI_LOGICAL is a 4-byte Fortran
 * LOGICAL, .TRUE. == 1 as gfortran stores it. */
#define MPI_CHARACTER ((MPI_Datatype)46)
#define MPI_INTEGER ((MPI_Datatype)47)
#define MPI_REAL ((MPI_Datatype)48)
#define MPI_DOUBLE_PRECISION ((MPI_Datatype)49)
#define MPI_COMPLEX ((MPI_Datatype)50)
#define MPI_DOUBLE_COMPLEX ((MPI_Datatype)51)
#define MPI_LOGICAL ((MPI_Datatype)52)
#define MPI_INTEGER1 ((MPI_Datatype)53)
#define MPI_INTEGER2 ((MPI_Datatype)54)
#define MPI_INTEGER4 ((MPI_Datatype)55)
#define MPI_INTEGER8 ((MPI_Datatype)56)
#define MPI_REAL4 ((MPI_Datatype)57)
#define MPI_REAL8 ((MPI_Datatype)58)
#define MPI_2INTEGER ((MPI_Datatype)59)
#define MPI_2REAL ((MPI_Datatype)60)
#define MPI_2DOUBLE_PRECISION ((MPI_Datatype)61)

/* ---- constants ---------------------------------------------------------- */
#define MPI_ANY_SOURCE (-2)
#define MPI_ANY_TAG (-1)
#define MPI_PROC_NULL (-1)
#define MPI_ROOT (-3)
#define MPI_UNDEFINED (-32766)
#define MPI_TAG_UB_VALUE 0x7fffffff     /* largest tag (viaduct) */
#define MPI_IN_PLACE ((void *)-1)
#define MPI_BOTTOM ((void *)0)
#define MPI_STATUS_IGNORE ((MPI_Status *)1)
#define MPI_STATUSES_IGNORE ((MPI_Status *)1)
#define MPI_MAX_PROCESSOR_NAME 128
#define MPI_MAX_ERROR_STRING 512
#define MPI_MAX_LIBRARY_VERSION_STRING 256
#define MPI_BSEND_OVERHEAD 128
#define MPI_MAX_OBJECT_NAME 128

/* datatype constructors */
#define MPI_ORDER_C 0
#define MPI_ORDER_FORTRAN 1
#define MPI_DISTRIBUTE_BLOCK 0
#define MPI_DISTRIBUTE_CYCLIC 1
#define MPI_DISTRIBUTE_NONE 2
#define MPI_DISTRIBUTE_DFLT_DARG (-49767)
#define MPI_TYPECLASS_INTEGER 1
#define MPI_TYPECLASS_REAL 2
#define MPI_TYPECLASS_COMPLEX 3
/* MPI_Type_get_envelope */
#define MPI_COMBINER_NAMED 1
#define MPI_COMBINER_DUP 2
#define MPI_COMBINER_CONTIGUOUS 3
#define MPI_COMBINER_VECTOR 4
#define MPI_COMBINER_HVECTOR 5
#define MPI_COMBINER_INDEXED 6
#define MPI_COMBINER_HINDEXED 7
#define MPI_COMBINER_INDEXED_BLOCK 8
#define MPI_COMBINER_HINDEXED_BLOCK 9
#define MPI_COMBINER_STRUCT 10
#define MPI_COMBINER_SUBARRAY 11
#define MPI_COMBINER_DARRAY 12
#define MPI_COMBINER_F90_REAL 13
#define MPI_COMBINER_F90_COMPLEX 14
#define MPI_COMBINER_F90_INTEGER 15
#define MPI_COMBINER_RESIZED 16

#define MPI_MAX_OBJECT_NAME 128
#define MPI_MAX_INFO_KEY 255
#define MPI_MAX_INFO_VAL 1024

/* Attribute keys: MPI_KEYVAL_INVALID, then the predefined attributes of
 * MPI_COMM_WORLD; keys the program creates come above them. */
#define MPI_KEYVAL_INVALID 0
#define MPI_TAG_UB 1
#define MPI_HOST 2
#define MPI_IO 3
#define MPI_WTIME_IS_GLOBAL 4
#define MPI_UNIVERSE_SIZE 5
#define MPI_LASTUSEDCODE 6
#define MPI_APPNUM 7

#define MPI_COMM_TYPE_SHARED 1

#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3

#define MPI_IDENT 0
#define MPI_CONGRUENT 1
#define MPI_SIMILAR 2
#define MPI_UNEQUAL 3

/* Topology kinds (MPI_Topo_test), and the weights sentinels of the
 * distributed graph constructors (never valid addresses; near the top
 * of the address space, as GCC takes small ones for null pointers). */
#define MPI_GRAPH 1
#define MPI_CART 2
#define MPI_DIST_GRAPH 3
#define MPI_UNWEIGHTED ((int *)-2)
#define MPI_WEIGHTS_EMPTY ((int *)-3)

/* ---- error classes ------------------------------------------------------- */
#define MPI_SUCCESS 0
#define MPI_ERR_BUFFER 1
#define MPI_ERR_COUNT 2
#define MPI_ERR_TYPE 3
#define MPI_ERR_TAG 4
#define MPI_ERR_COMM 5
#define MPI_ERR_RANK 6
#define MPI_ERR_REQUEST 7
#define MPI_ERR_ROOT 8
#define MPI_ERR_GROUP 9
#define MPI_ERR_OP 10
#define MPI_ERR_TOPOLOGY 11
#define MPI_ERR_DIMS 12
#define MPI_ERR_ARG 13
#define MPI_ERR_UNKNOWN 14
#define MPI_ERR_TRUNCATE 15
#define MPI_ERR_OTHER 16
#define MPI_ERR_INTERN 17
#define MPI_ERR_IN_STATUS 18
#define MPI_ERR_PENDING 19
#define MPI_ERR_INFO 28
#define MPI_ERR_INFO_KEY 29
#define MPI_ERR_INFO_VALUE 30
#define MPI_ERR_INFO_NOKEY 31
#define MPI_ERR_NO_MEM 34
#define MPI_ERR_WIN 45
#define MPI_ERR_BASE 46
#define MPI_ERR_LOCKTYPE 47
#define MPI_ERR_RMA_CONFLICT 49
#define MPI_ERR_RMA_SYNC 50
#define MPI_ERR_SIZE 51
#define MPI_ERR_DISP 52
#define MPI_ERR_ASSERT 53
#define MPI_ERR_RMA_RANGE 55
#define MPI_ERR_RMA_ATTACH 56
#define MPI_ERR_RMA_SHARED 57
#define MPI_ERR_RMA_FLAVOR 58
#define MPI_ERR_KEYVAL 48
#define MPI_ERR_LASTCODE 100

/* ---- environment ----------------------------------------------------------- */
int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Initialized(int *flag);
int MPI_Finalize(void);
int MPI_Finalized(int *flag);
int MPI_Abort(MPI_Comm comm, int errorcode);
int MPI_Query_thread(int *provided);
int MPI_Is_thread_main(int *flag);
int MPI_Get_version(int *version, int *subversion);
int MPI_Get_library_version(char *version, int *resultlen);
int MPI_Get_processor_name(char *name, int *resultlen);
double MPI_Wtime(void);
double MPI_Wtick(void);
int MPI_Pcontrol(const int level, ...);
int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr);
int MPI_Free_mem(void *base);

/* ---- errors ----------------------------------------------------------------- */
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
int MPI_Error_string(int errorcode, char *string, int *resultlen);
int MPI_Error_class(int errorcode, int *errorclass);
int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *comm_errhandler_fn,
			       MPI_Errhandler *errhandler);
int MPI_Errhandler_free(MPI_Errhandler *errhandler);
int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode);
int MPI_Add_error_class(int *errorclass);
int MPI_Add_error_code(int errorclass, int *errorcode);
int MPI_Add_error_string(int errorcode, const char *string);

/* ---- point to point ------------------------------------------------------------ */
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	     MPI_Comm comm);
int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	      MPI_Comm comm);
int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	      MPI_Comm comm);
int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	      MPI_Comm comm);
int MPI_Buffer_attach(void *buffer, int size);
int MPI_Buffer_detach(void *buffer_addr, int *size);
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
	     MPI_Comm comm, MPI_Status *status);
int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	      MPI_Comm comm, MPI_Request *request);
int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	       MPI_Comm comm, MPI_Request *request);
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
	      MPI_Comm comm, MPI_Request *request);
int MPI_Wait(MPI_Request *request, MPI_Status *status);
int MPI_Waitall(int count, MPI_Request requests[], MPI_Status *statuses);
int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status);
int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
		 MPI_Status *statuses);
int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status *statuses);
int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag,
		MPI_Status *status);
int MPI_Request_free(MPI_Request *request);
int MPI_Cancel(MPI_Request *request);
int MPI_Test_cancelled(const MPI_Status *status, int *flag);
int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);
int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	       MPI_Comm comm, MPI_Request *request);
int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	       MPI_Comm comm, MPI_Request *request);
int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
		 MPI_Status *statuses);
int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status);
int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
		  MPI_Comm comm, MPI_Request *request);
int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
		   MPI_Comm comm, MPI_Request *request);
int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
		   MPI_Comm comm, MPI_Request *request);
int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
		   MPI_Comm comm, MPI_Request *request);
int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag,
		  MPI_Comm comm, MPI_Request *request);
int MPI_Start(MPI_Request *request);
int MPI_Startall(int count, MPI_Request requests[]);
int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message,
	       MPI_Status *status);
int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
		MPI_Status *status);
int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
	      MPI_Status *status);
int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
	       MPI_Request *request);
int MPI_Grequest_start(MPI_Grequest_query_function *query_fn,
		       MPI_Grequest_free_function *free_fn,
		       MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
		       MPI_Request *request);
int MPI_Grequest_complete(MPI_Request request);
int MPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count);
int MPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count);
int MPI_Status_set_cancelled(MPI_Status *status, int flag);
int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
		 int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
		 int source, int recvtag, MPI_Comm comm, MPI_Status *status);
int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest,
			 int sendtag, int source, int recvtag, MPI_Comm comm,
			 MPI_Status *status);

/* ---- datatypes ------------------------------------------------------------------ */
int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
		    MPI_Datatype *newtype);
int MPI_Type_indexed(int count, const int blocklengths[], const int displacements[],
		     MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_commit(MPI_Datatype *datatype);
int MPI_Type_free(MPI_Datatype *datatype);
int MPI_Type_size(MPI_Datatype datatype, int *size);
int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent);
int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride,
			    MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_create_hindexed(int count, const int blocklengths[],
			     const MPI_Aint displacements[], MPI_Datatype oldtype,
			     MPI_Datatype *newtype);
int MPI_Type_create_indexed_block(int count, int blocklength, const int displacements[],
				  MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_create_hindexed_block(int count, int blocklength,
				   const MPI_Aint displacements[], MPI_Datatype oldtype,
				   MPI_Datatype *newtype);
int MPI_Type_create_struct(int count, const int blocklengths[],
			   const MPI_Aint displacements[], const MPI_Datatype types[],
			   MPI_Datatype *newtype);
int MPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[],
			     const int starts[], int order, MPI_Datatype oldtype,
			     MPI_Datatype *newtype);
int MPI_Type_create_darray(int size, int rank, int ndims, const int gsizes[],
			   const int distribs[], const int dargs[], const int psizes[],
			   int order, MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
			    MPI_Datatype *newtype);
int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_create_f90_integer(int r, MPI_Datatype *newtype);
int MPI_Type_create_f90_real(int p, int r, MPI_Datatype *newtype);
int MPI_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype);
int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb,
			     MPI_Aint *true_extent);
int MPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size);
int MPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent);
int MPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb,
			       MPI_Count *true_extent);
int MPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
			  int *num_datatypes, int *combiner);
int MPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
			  int max_datatypes, int integers[], MPI_Aint addresses[],
			  MPI_Datatype datatypes[]);
int MPI_Type_set_name(MPI_Datatype datatype, const char *type_name);
int MPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen);
int MPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype);
int MPI_Get_address(const void *location, MPI_Aint *address);
MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp);
MPI_Aint MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2);
int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count);
int MPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count);
int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf,
	     int outsize, int *position, MPI_Comm comm);
int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
	       MPI_Datatype datatype, MPI_Comm comm);
int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size);
int MPI_Pack_external(const char datarep[], const void *inbuf, int incount,
		      MPI_Datatype datatype, void *outbuf, MPI_Aint outsize, MPI_Aint *position);
int MPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize,
			MPI_Aint *position, void *outbuf, int outcount, MPI_Datatype datatype);
int MPI_Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype,
			   MPI_Aint *size);

/* ---- communicators and groups ------------------------------------------------------ */
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result);
int MPI_Comm_group(MPI_Comm comm, MPI_Group *group);
int MPI_Group_size(MPI_Group group, int *size);
int MPI_Group_rank(MPI_Group group, int *rank);
int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
int MPI_Group_free(MPI_Group *group);
int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
			      int ranks2[]);
int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result);
int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm);
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm);
int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
			MPI_Comm *newcomm);
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request);
int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm);
int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info);
int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used);
int MPI_Comm_test_inter(MPI_Comm comm, int *flag);
int MPI_Comm_remote_size(MPI_Comm comm, int *size);
int MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group);
int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
			 int remote_leader, int tag, MPI_Comm *newintercomm);
int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm);
int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name);
int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen);
int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
			   MPI_Comm_delete_attr_function *comm_delete_attr_fn,
			   int *comm_keyval, void *extra_state);
int MPI_Comm_free_keyval(int *comm_keyval);
int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val);
int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag);
int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval);
int MPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
			   MPI_Type_delete_attr_function *type_delete_attr_fn,
			   int *type_keyval, void *extra_state);
int MPI_Type_free_keyval(int *type_keyval);
int MPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val);
int MPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val,
		      int *flag);
int MPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval);
/* Predefined attribute callbacks. */
int MPI_COMM_NULL_COPY_FN(MPI_Comm oldcomm, int comm_keyval, void *extra_state,
			  void *attribute_val_in, void *attribute_val_out, int *flag);
int MPI_COMM_DUP_FN(MPI_Comm oldcomm, int comm_keyval, void *extra_state,
		    void *attribute_val_in, void *attribute_val_out, int *flag);
int MPI_COMM_NULL_DELETE_FN(MPI_Comm comm, int comm_keyval, void *attribute_val,
			    void *extra_state);
int MPI_TYPE_NULL_COPY_FN(MPI_Datatype oldtype, int type_keyval, void *extra_state,
			  void *attribute_val_in, void *attribute_val_out, int *flag);
int MPI_TYPE_DUP_FN(MPI_Datatype oldtype, int type_keyval, void *extra_state,
		    void *attribute_val_in, void *attribute_val_out, int *flag);
int MPI_TYPE_NULL_DELETE_FN(MPI_Datatype datatype, int type_keyval, void *attribute_val,
			    void *extra_state);

/* ---- info ------------------------------------------------------------------------ */
int MPI_Info_create(MPI_Info *info);
int MPI_Info_set(MPI_Info info, const char *key, const char *value);
int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag);
int MPI_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value,
			int *flag);
int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag);
int MPI_Info_delete(MPI_Info info, const char *key);
int MPI_Info_get_nkeys(MPI_Info info, int *nkeys);
int MPI_Info_get_nthkey(MPI_Info info, int n, char *key);
int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo);
int MPI_Info_free(MPI_Info *info);

/* ---- collectives ------------------------------------------------------------------- */
int MPI_Barrier(MPI_Comm comm);
int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	       MPI_Op op, int root, MPI_Comm comm);
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		  MPI_Op op, MPI_Comm comm);
int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
	       int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		const int recvcounts[], const int displs[], MPI_Datatype recvtype,
		int root, MPI_Comm comm);
int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
		 MPI_Datatype sendtype, void *recvbuf, int recvcount,
		 MPI_Datatype recvtype, int root, MPI_Comm comm);
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		  void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		   void *recvbuf, const int recvcounts[], const int displs[],
		   MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
		  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
		       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
			     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	     MPI_Op op, MPI_Comm comm);
int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	       MPI_Op op, MPI_Comm comm);
int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
		  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
		  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm);
/* nonblocking collectives: the request completes through Wait/Test */
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request);
int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
	       MPI_Request *request);
int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
		MPI_Request *request);
int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
		 MPI_Comm comm, MPI_Request *request);
int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
		 MPI_Request *request);
int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
		  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
		  int root, MPI_Comm comm, MPI_Request *request);
int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		   void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
		   MPI_Request *request);
int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		    void *recvbuf, const int recvcounts[], const int displs[],
		    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
		   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
		   MPI_Request *request);
int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
		   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
		   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
		   MPI_Request *request);
int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		MPI_Op op, int root, MPI_Comm comm, MPI_Request *request);
int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		   MPI_Op op, MPI_Comm comm, MPI_Request *request);
int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
			MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request);
int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
			      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
			      MPI_Request *request);
int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	      MPI_Op op, MPI_Comm comm, MPI_Request *request);
int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		MPI_Op op, MPI_Comm comm, MPI_Request *request);
int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op);
int MPI_Op_free(MPI_Op *op);
int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
		     MPI_Op op);
int MPI_Op_commutative(MPI_Op op, int *commute);

/* ---- MPI-1 names that MPI-3.0 removed, kept for old programs ------------------- */
typedef MPI_Comm_copy_attr_function MPI_Copy_function;
typedef MPI_Comm_delete_attr_function MPI_Delete_function;
typedef MPI_Comm_errhandler_function MPI_Handler_function;
#define MPI_NULL_COPY_FN MPI_COMM_NULL_COPY_FN
#define MPI_NULL_DELETE_FN MPI_COMM_NULL_DELETE_FN
#define MPI_DUP_FN MPI_COMM_DUP_FN
int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag);
int MPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val);
int MPI_Attr_delete(MPI_Comm comm, int keyval);
int MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn,
		      int *keyval, void *extra_state);
int MPI_Keyval_free(int *keyval);
int MPI_Errhandler_create(MPI_Handler_function *function, MPI_Errhandler *errhandler);
int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler);
int MPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler);
int MPI_Address(void *location, MPI_Aint *address);
int MPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent);
int MPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement);
int MPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement);
int MPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
		     MPI_Datatype *newtype);
int MPI_Type_hindexed(int count, int blocklengths[], MPI_Aint displacements[],
		      MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_struct(int count, int blocklengths[], MPI_Aint displacements[],
		    MPI_Datatype types[], MPI_Datatype *newtype);

/* ---- Fortran interoperability ----------------------------------------------
 * Handles are the same integers in C and Fortran, and a Fortran status is
 * the C struct's MPI_STATUS_SIZE (5) ints, so the conversions copy. */
MPI_Fint MPI_Comm_c2f(MPI_Comm comm);
MPI_Comm MPI_Comm_f2c(MPI_Fint comm);
MPI_Fint MPI_Type_c2f(MPI_Datatype datatype);
MPI_Datatype MPI_Type_f2c(MPI_Fint datatype);
MPI_Fint MPI_Group_c2f(MPI_Group group);
MPI_Group MPI_Group_f2c(MPI_Fint group);
MPI_Fint MPI_Request_c2f(MPI_Request request);
MPI_Request MPI_Request_f2c(MPI_Fint request);
MPI_Fint MPI_Op_c2f(MPI_Op op);
MPI_Op MPI_Op_f2c(MPI_Fint op);
MPI_Fint MPI_Info_c2f(MPI_Info info);
MPI_Info MPI_Info_f2c(MPI_Fint info);
MPI_Fint MPI_Errhandler_c2f(MPI_Errhandler errhandler);
MPI_Errhandler MPI_Errhandler_f2c(MPI_Fint errhandler);
MPI_Fint MPI_Win_c2f(MPI_Win win);
MPI_Win MPI_Win_f2c(MPI_Fint win);
MPI_Fint MPI_Message_c2f(MPI_Message message);
MPI_Message MPI_Message_f2c(MPI_Fint message);
int MPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status);
int MPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status);
/* The storage of the common blocks behind Fortran's MPI_BOTTOM,
 * MPI_IN_PLACE, MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE, MPI_UNWEIGHTED
 * and MPI_WEIGHTS_EMPTY (one address per program), so C code called from
 * Fortran can recognise them. */
extern MPI_Fint vd_mpi_fbottom_[1];
extern MPI_Fint vd_mpi_finplace_[1];
extern MPI_Fint vd_mpi_funweighted_[1];
extern MPI_Fint vd_mpi_fweights_empty_[1];
extern MPI_Fint vd_mpi_fstatus_ignore_[5];
extern MPI_Fint vd_mpi_fstatuses_ignore_[5];
#define MPI_F_STATUS_IGNORE (vd_mpi_fstatus_ignore_)
#define MPI_F_STATUSES_IGNORE (vd_mpi_fstatuses_ignore_)
/* ---- process topologies and neighbourhood collectives ---------------------------- */
int MPI_Dims_create(int nnodes, int ndims, int dims[]);
int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
		    int reorder, MPI_Comm *comm_cart);
int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]);
int MPI_Cartdim_get(MPI_Comm comm, int *ndims);
int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank);
int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]);
int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source,
		   int *rank_dest);
int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm);
int MPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[],
		 int *newrank);
int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[],
		     int reorder, MPI_Comm *comm_graph);
int MPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges);
int MPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[]);
int MPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors);
int MPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[]);
int MPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[],
		  int *newrank);
int MPI_Topo_test(MPI_Comm comm, int *status);
int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
				   const int sourceweights[], int outdegree,
				   const int destinations[], const int destweights[],
				   MPI_Info info, int reorder, MPI_Comm *comm_dist_graph);
int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[],
			  const int degrees[], const int destinations[], const int weights[],
			  MPI_Info info, int reorder, MPI_Comm *comm_dist_graph);
int MPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree,
				   int *weighted);
int MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[],
			     int sourceweights[], int maxoutdegree, int destinations[],
			     int destweights[]);
int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			   void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			    void *recvbuf, const int recvcounts[], const int displs[],
			    MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			  void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
			   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
			   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[],
			   const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
			   void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
			   const MPI_Datatype recvtypes[], MPI_Comm comm);
int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			    void *recvbuf, int recvcount, MPI_Datatype recvtype,
			    MPI_Comm comm, MPI_Request *request);
int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			     void *recvbuf, const int recvcounts[], const int displs[],
			     MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			   void *recvbuf, int recvcount, MPI_Datatype recvtype,
			   MPI_Comm comm, MPI_Request *request);
int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
			    MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
			    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
			    MPI_Request *request);
int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[],
			    const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
			    void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
			    const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request);
/* ---- one-sided communication ------------------------------------------------------ */
#define MPI_MAX_OBJECT_NAME 128
#define MPI_LOCK_EXCLUSIVE 234
#define MPI_LOCK_SHARED 235
/* assertions (bits) */
#define MPI_MODE_NOCHECK 1024
#define MPI_MODE_NOSTORE 2048
#define MPI_MODE_NOPUT 4096
#define MPI_MODE_NOPRECEDE 8192
#define MPI_MODE_NOSUCCEED 16384
/* window attributes (MPI_Win_get_attr) */
#define MPI_WIN_BASE 0x66000001
#define MPI_WIN_SIZE 0x66000003
#define MPI_WIN_DISP_UNIT 0x66000005
#define MPI_WIN_CREATE_FLAVOR 0x66000007
#define MPI_WIN_MODEL 0x66000009
#define MPI_WIN_FLAVOR_CREATE 1
#define MPI_WIN_FLAVOR_ALLOCATE 2
#define MPI_WIN_FLAVOR_DYNAMIC 3
#define MPI_WIN_FLAVOR_SHARED 4
#define MPI_WIN_SEPARATE 1
#define MPI_WIN_UNIFIED 2
int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
		   MPI_Win *win);
int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
		     void *baseptr, MPI_Win *win);
int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
			    void *baseptr, MPI_Win *win);
int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
			 void *baseptr);
int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win);
int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size);
int MPI_Win_detach(MPI_Win win, const void *base);
int MPI_Win_free(MPI_Win *win);
int MPI_Win_get_group(MPI_Win win, MPI_Group *group);
int MPI_Win_set_name(MPI_Win win, const char *win_name);
int MPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen);
int MPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag);
int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler);
int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler);
int MPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn,
			  MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval,
			  void *extra_state);
int MPI_Win_free_keyval(int *win_keyval);
int MPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val);
int MPI_Win_delete_attr(MPI_Win win, int win_keyval);
int MPI_WIN_NULL_COPY_FN(MPI_Win oldwin, int win_keyval, void *extra_state,
			 void *attribute_val_in, void *attribute_val_out, int *flag);
int MPI_WIN_DUP_FN(MPI_Win oldwin, int win_keyval, void *extra_state, void *attribute_val_in,
		   void *attribute_val_out, int *flag);
int MPI_WIN_NULL_DELETE_FN(MPI_Win win, int win_keyval, void *attribute_val,
			   void *extra_state);
int MPI_Win_create_errhandler(MPI_Win_errhandler_function *win_errhandler_fn,
			      MPI_Errhandler *errhandler);
int MPI_Win_call_errhandler(MPI_Win win, int errorcode);
int MPI_Win_set_info(MPI_Win win, MPI_Info info);
int MPI_Win_get_info(MPI_Win win, MPI_Info *info_used);
int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
	    int target_rank, MPI_Aint target_disp, int target_count,
	    MPI_Datatype target_datatype, MPI_Win win);
int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
	    int target_rank, MPI_Aint target_disp, int target_count,
	    MPI_Datatype target_datatype, MPI_Win win);
int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
		   int target_rank, MPI_Aint target_disp, int target_count,
		   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win);
int MPI_Get_accumulate(const void *origin_addr, int origin_count,
		       MPI_Datatype origin_datatype, void *result_addr, int result_count,
		       MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
		       int target_count, MPI_Datatype target_datatype, MPI_Op op,
		       MPI_Win win);
int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
		     int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win);
int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr,
			 void *result_addr, MPI_Datatype datatype, int target_rank,
			 MPI_Aint target_disp, MPI_Win win);
int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
	     int target_rank, MPI_Aint target_disp, int target_count,
	     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request);
int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
	     int target_rank, MPI_Aint target_disp, int target_count,
	     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request);
int MPI_Raccumulate(const void *origin_addr, int origin_count,
		    MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
		    int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
		    MPI_Request *request);
int MPI_Rget_accumulate(const void *origin_addr, int origin_count,
			MPI_Datatype origin_datatype, void *result_addr, int result_count,
			MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
			int target_count, MPI_Datatype target_datatype, MPI_Op op,
			MPI_Win win, MPI_Request *request);
int MPI_Win_fence(int assert, MPI_Win win);
int MPI_Win_post(MPI_Group group, int assert, MPI_Win win);
int MPI_Win_start(MPI_Group group, int assert, MPI_Win win);
int MPI_Win_complete(MPI_Win win);
int MPI_Win_wait(MPI_Win win);
int MPI_Win_test(MPI_Win win, int *flag);
int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win);
int MPI_Win_unlock(int rank, MPI_Win win);
int MPI_Win_lock_all(int assert, MPI_Win win);
int MPI_Win_unlock_all(MPI_Win win);
int MPI_Win_flush(int rank, MPI_Win win);
int MPI_Win_flush_all(MPI_Win win);
int MPI_Win_flush_local(int rank, MPI_Win win);
int MPI_Win_flush_local_all(MPI_Win win);
int MPI_Win_sync(MPI_Win win);

/* ---- profiling interface --------------------------------------------------
 * Every MPI_ function is also PMPI_ (MPI_ is a weak alias of it), so a
 * profiling tool defines MPI_Send, counts, and calls PMPI_Send.  The
 * library's own calls go to PMPI_, never through a tool's MPI_. */
int PMPI_Init(int *argc, char ***argv);
int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int PMPI_Initialized(int *flag);
int PMPI_Finalize(void);
int PMPI_Finalized(int *flag);
int PMPI_Abort(MPI_Comm comm, int errorcode);
int PMPI_Query_thread(int *provided);
int PMPI_Is_thread_main(int *flag);
int PMPI_Get_version(int *version, int *subversion);
int PMPI_Get_library_version(char *version, int *resultlen);
int PMPI_Get_processor_name(char *name, int *resultlen);
double PMPI_Wtime(void);
double PMPI_Wtick(void);
int PMPI_Pcontrol(const int level, ...);
int PMPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr);
int PMPI_Free_mem(void *base);
int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
int PMPI_Error_string(int errorcode, char *string, int *resultlen);
int PMPI_Error_class(int errorcode, int *errorclass);
int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function *comm_errhandler_fn,
			        MPI_Errhandler *errhandler);
int PMPI_Errhandler_free(MPI_Errhandler *errhandler);
int PMPI_Comm_call_errhandler(MPI_Comm comm, int errorcode);
int PMPI_Add_error_class(int *errorclass);
int PMPI_Add_error_code(int errorclass, int *errorcode);
int PMPI_Add_error_string(int errorcode, const char *string);
int PMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	       MPI_Comm comm);
int PMPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	        MPI_Comm comm);
int PMPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	       MPI_Comm comm);
int PMPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	       MPI_Comm comm);
int PMPI_Buffer_attach(void *buffer, int size);
int PMPI_Buffer_detach(void *buffer_addr, int *size);
int PMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
	      MPI_Comm comm, MPI_Status *status);
int PMPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	       MPI_Comm comm, MPI_Request *request);
int PMPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	        MPI_Comm comm, MPI_Request *request);
int PMPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
	       MPI_Comm comm, MPI_Request *request);
int PMPI_Wait(MPI_Request *request, MPI_Status *status);
int PMPI_Waitall(int count, MPI_Request requests[], MPI_Status *statuses);
int PMPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status);
int PMPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
		  MPI_Status *statuses);
int PMPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
int PMPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status *statuses);
int PMPI_Testany(int count, MPI_Request requests[], int *index, int *flag,
		 MPI_Status *status);
int PMPI_Request_free(MPI_Request *request);
int PMPI_Cancel(MPI_Request *request);
int PMPI_Test_cancelled(const MPI_Status *status, int *flag);
int PMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
int PMPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
int PMPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);
int PMPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	        MPI_Comm comm, MPI_Request *request);
int PMPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
	        MPI_Comm comm, MPI_Request *request);
int PMPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
		  MPI_Status *statuses);
int PMPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status);
int PMPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
		   MPI_Comm comm, MPI_Request *request);
int PMPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
		    MPI_Comm comm, MPI_Request *request);
int PMPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
		    MPI_Comm comm, MPI_Request *request);
int PMPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
		    MPI_Comm comm, MPI_Request *request);
int PMPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag,
		   MPI_Comm comm, MPI_Request *request);
int PMPI_Start(MPI_Request *request);
int PMPI_Startall(int count, MPI_Request requests[]);
int PMPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message,
	        MPI_Status *status);
int PMPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
		 MPI_Status *status);
int PMPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
	       MPI_Status *status);
int PMPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
	        MPI_Request *request);
int PMPI_Grequest_start(MPI_Grequest_query_function *query_fn,
			MPI_Grequest_free_function *free_fn,
			MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
			MPI_Request *request);
int PMPI_Grequest_complete(MPI_Request request);
int PMPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count);
int PMPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype,
			       MPI_Count count);
int PMPI_Status_set_cancelled(MPI_Status *status, int flag);
int PMPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
		  int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
		  int source, int recvtag, MPI_Comm comm, MPI_Status *status);
int PMPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest,
			  int sendtag, int source, int recvtag, MPI_Comm comm,
			  MPI_Status *status);
int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype);
int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
		     MPI_Datatype *newtype);
int PMPI_Type_indexed(int count, const int blocklengths[], const int displacements[],
		      MPI_Datatype oldtype, MPI_Datatype *newtype);
int PMPI_Type_commit(MPI_Datatype *datatype);
int PMPI_Type_free(MPI_Datatype *datatype);
int PMPI_Type_size(MPI_Datatype datatype, int *size);
int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent);
int PMPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride,
			     MPI_Datatype oldtype, MPI_Datatype *newtype);
int PMPI_Type_create_hindexed(int count, const int blocklengths[],
			      const MPI_Aint displacements[], MPI_Datatype oldtype,
			      MPI_Datatype *newtype);
int PMPI_Type_create_indexed_block(int count, int blocklength, const int displacements[],
				   MPI_Datatype oldtype, MPI_Datatype *newtype);
int PMPI_Type_create_hindexed_block(int count, int blocklength,
				    const MPI_Aint displacements[], MPI_Datatype oldtype,
				    MPI_Datatype *newtype);
int PMPI_Type_create_struct(int count, const int blocklengths[],
			    const MPI_Aint displacements[], const MPI_Datatype types[],
			    MPI_Datatype *newtype);
int PMPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[],
			      const int starts[], int order, MPI_Datatype oldtype,
			      MPI_Datatype *newtype);
int PMPI_Type_create_darray(int size, int rank, int ndims, const int gsizes[],
			    const int distribs[], const int dargs[], const int psizes[],
			    int order, MPI_Datatype oldtype, MPI_Datatype *newtype);
int PMPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
			     MPI_Datatype *newtype);
int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype);
int PMPI_Type_create_f90_integer(int r, MPI_Datatype *newtype);
int PMPI_Type_create_f90_real(int p, int r, MPI_Datatype *newtype);
int PMPI_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype);
int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb,
			      MPI_Aint *true_extent);
int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size);
int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent);
int PMPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb,
			        MPI_Count *true_extent);
int PMPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
			   int *num_datatypes, int *combiner);
int PMPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
			   int max_datatypes, int integers[], MPI_Aint addresses[],
			   MPI_Datatype datatypes[]);
int PMPI_Type_set_name(MPI_Datatype datatype, const char *type_name);
int PMPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen);
int PMPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype);
int PMPI_Get_address(const void *location, MPI_Aint *address);
MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp);
MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2);
int PMPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count);
int PMPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count);
int PMPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf,
	      int outsize, int *position, MPI_Comm comm);
int PMPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
	        MPI_Datatype datatype, MPI_Comm comm);
int PMPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size);
int PMPI_Pack_external(const char datarep[], const void *inbuf, int incount,
		       MPI_Datatype datatype, void *outbuf, MPI_Aint outsize, MPI_Aint *position);
int PMPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize,
			 MPI_Aint *position, void *outbuf, int outcount, MPI_Datatype datatype);
int PMPI_Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype,
			    MPI_Aint *size);
int PMPI_Comm_size(MPI_Comm comm, int *size);
int PMPI_Comm_rank(MPI_Comm comm, int *rank);
int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
int PMPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
int PMPI_Comm_free(MPI_Comm *comm);
int PMPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result);
int PMPI_Comm_group(MPI_Comm comm, MPI_Group *group);
int PMPI_Group_size(MPI_Group group, int *size);
int PMPI_Group_rank(MPI_Group group, int *rank);
int PMPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
int PMPI_Group_free(MPI_Group *group);
int PMPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
			       int ranks2[]);
int PMPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result);
int PMPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
int PMPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
int PMPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
int PMPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
int PMPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
int PMPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm);
int PMPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm);
int PMPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
			 MPI_Comm *newcomm);
int PMPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request);
int PMPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm);
int PMPI_Comm_set_info(MPI_Comm comm, MPI_Info info);
int PMPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used);
int PMPI_Comm_test_inter(MPI_Comm comm, int *flag);
int PMPI_Comm_remote_size(MPI_Comm comm, int *size);
int PMPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group);
int PMPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
			  int remote_leader, int tag, MPI_Comm *newintercomm);
int PMPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm);
int PMPI_Comm_set_name(MPI_Comm comm, const char *comm_name);
int PMPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen);
int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
			    MPI_Comm_delete_attr_function *comm_delete_attr_fn,
			    int *comm_keyval, void *extra_state);
int PMPI_Comm_free_keyval(int *comm_keyval);
int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val);
int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag);
int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval);
int PMPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
			    MPI_Type_delete_attr_function *type_delete_attr_fn,
			    int *type_keyval, void *extra_state);
int PMPI_Type_free_keyval(int *type_keyval);
int PMPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val);
int PMPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val,
		       int *flag);
int PMPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval);
int PMPI_COMM_NULL_COPY_FN(MPI_Comm oldcomm, int comm_keyval, void *extra_state,
			   void *attribute_val_in, void *attribute_val_out, int *flag);
int PMPI_COMM_DUP_FN(MPI_Comm oldcomm, int comm_keyval, void *extra_state,
		     void *attribute_val_in, void *attribute_val_out, int *flag);
int PMPI_COMM_NULL_DELETE_FN(MPI_Comm comm, int comm_keyval, void *attribute_val,
			     void *extra_state);
int PMPI_TYPE_NULL_COPY_FN(MPI_Datatype oldtype, int type_keyval, void *extra_state,
			   void *attribute_val_in, void *attribute_val_out, int *flag);
int PMPI_TYPE_DUP_FN(MPI_Datatype oldtype, int type_keyval, void *extra_state,
		     void *attribute_val_in, void *attribute_val_out, int *flag);
int PMPI_TYPE_NULL_DELETE_FN(MPI_Datatype datatype, int type_keyval, void *attribute_val,
			     void *extra_state);
int PMPI_Info_create(MPI_Info *info);
int PMPI_Info_set(MPI_Info info, const char *key, const char *value);
int PMPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag);
int PMPI_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value,
			 int *flag);
int PMPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag);
int PMPI_Info_delete(MPI_Info info, const char *key);
int PMPI_Info_get_nkeys(MPI_Info info, int *nkeys);
int PMPI_Info_get_nthkey(MPI_Info info, int n, char *key);
int PMPI_Info_dup(MPI_Info info, MPI_Info *newinfo);
int PMPI_Info_free(MPI_Info *info);
int PMPI_Barrier(MPI_Comm comm);
int PMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int PMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	        MPI_Op op, int root, MPI_Comm comm);
int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		   MPI_Op op, MPI_Comm comm);
int PMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
	        int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int PMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 const int recvcounts[], const int displs[], MPI_Datatype recvtype,
		 int root, MPI_Comm comm);
int PMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int PMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
		  MPI_Datatype sendtype, void *recvbuf, int recvcount,
		  MPI_Datatype recvtype, int root, MPI_Comm comm);
int PMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		   void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int PMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		    void *recvbuf, const int recvcounts[], const int displs[],
		    MPI_Datatype recvtype, MPI_Comm comm);
int PMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		  int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int PMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
		   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
int PMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
		        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int PMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
			      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int PMPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	      MPI_Op op, MPI_Comm comm);
int PMPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	        MPI_Op op, MPI_Comm comm);
int PMPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
		   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
		   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm);
/* nonblocking collectives: the request completes through Wait/Test */
int PMPI_Ibarrier(MPI_Comm comm, MPI_Request *request);
int PMPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
		MPI_Request *request);
int PMPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
		 MPI_Request *request);
int PMPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		  const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
		  MPI_Comm comm, MPI_Request *request);
int PMPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		  int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
		  MPI_Request *request);
int PMPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
		   MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
		   int root, MPI_Comm comm, MPI_Request *request);
int PMPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		    void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
		    MPI_Request *request);
int PMPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		     void *recvbuf, const int recvcounts[], const int displs[],
		     MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int PMPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int PMPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
		    MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
		    MPI_Request *request);
int PMPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
		    const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
		    const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
		    MPI_Request *request);
int PMPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		 MPI_Op op, int root, MPI_Comm comm, MPI_Request *request);
int PMPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		    MPI_Op op, MPI_Comm comm, MPI_Request *request);
int PMPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
			 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request);
int PMPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
			       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
			       MPI_Request *request);
int PMPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	       MPI_Op op, MPI_Comm comm, MPI_Request *request);
int PMPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		 MPI_Op op, MPI_Comm comm, MPI_Request *request);
int PMPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op);
int PMPI_Op_free(MPI_Op *op);
int PMPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
		      MPI_Op op);
int PMPI_Op_commutative(MPI_Op op, int *commute);
int PMPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag);
int PMPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val);
int PMPI_Attr_delete(MPI_Comm comm, int keyval);
int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn,
		       int *keyval, void *extra_state);
int PMPI_Keyval_free(int *keyval);
int PMPI_Errhandler_create(MPI_Handler_function *function, MPI_Errhandler *errhandler);
int PMPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler);
int PMPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler);
int PMPI_Address(void *location, MPI_Aint *address);
int PMPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent);
int PMPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement);
int PMPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement);
int PMPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
		      MPI_Datatype *newtype);
int PMPI_Type_hindexed(int count, int blocklengths[], MPI_Aint displacements[],
		       MPI_Datatype oldtype, MPI_Datatype *newtype);
int PMPI_Type_struct(int count, int blocklengths[], MPI_Aint displacements[],
		     MPI_Datatype types[], MPI_Datatype *newtype);
int PMPI_Dims_create(int nnodes, int ndims, int dims[]);
int PMPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
		     int reorder, MPI_Comm *comm_cart);
int PMPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]);
int PMPI_Cartdim_get(MPI_Comm comm, int *ndims);
int PMPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank);
int PMPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]);
int PMPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source,
		    int *rank_dest);
int PMPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm);
int PMPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[],
		  int *newrank);
int PMPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[],
		      int reorder, MPI_Comm *comm_graph);
int PMPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges);
int PMPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[]);
int PMPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors);
int PMPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[]);
int PMPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[],
		   int *newrank);
int PMPI_Topo_test(MPI_Comm comm, int *status);
int PMPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
				    const int sourceweights[], int outdegree,
				    const int destinations[], const int destweights[],
				    MPI_Info info, int reorder, MPI_Comm *comm_dist_graph);
int PMPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[],
			   const int degrees[], const int destinations[], const int weights[],
			   MPI_Info info, int reorder, MPI_Comm *comm_dist_graph);
int PMPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree,
				    int *weighted);
int PMPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[],
			      int sourceweights[], int maxoutdegree, int destinations[],
			      int destweights[]);
int PMPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			    void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int PMPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			     void *recvbuf, const int recvcounts[], const int displs[],
			     MPI_Datatype recvtype, MPI_Comm comm);
int PMPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			   void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int PMPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
			    MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
			    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
int PMPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[],
			    const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
			    void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
			    const MPI_Datatype recvtypes[], MPI_Comm comm);
int PMPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			     void *recvbuf, int recvcount, MPI_Datatype recvtype,
			     MPI_Comm comm, MPI_Request *request);
int PMPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			      void *recvbuf, const int recvcounts[], const int displs[],
			      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int PMPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			    void *recvbuf, int recvcount, MPI_Datatype recvtype,
			    MPI_Comm comm, MPI_Request *request);
int PMPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
			     MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
			     const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
			     MPI_Request *request);
int PMPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[],
			     const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
			     void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
			     const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request);

MPI_Fint PMPI_Comm_c2f(MPI_Comm comm);
MPI_Comm PMPI_Comm_f2c(MPI_Fint comm);
MPI_Fint PMPI_Type_c2f(MPI_Datatype datatype);
MPI_Datatype PMPI_Type_f2c(MPI_Fint datatype);
MPI_Fint PMPI_Group_c2f(MPI_Group group);
MPI_Group PMPI_Group_f2c(MPI_Fint group);
MPI_Fint PMPI_Request_c2f(MPI_Request request);
MPI_Request PMPI_Request_f2c(MPI_Fint request);
MPI_Fint PMPI_Op_c2f(MPI_Op op);
MPI_Op PMPI_Op_f2c(MPI_Fint op);
MPI_Fint PMPI_Info_c2f(MPI_Info info);
MPI_Info PMPI_Info_f2c(MPI_Fint info);
MPI_Fint PMPI_Errhandler_c2f(MPI_Errhandler errhandler);
MPI_Errhandler PMPI_Errhandler_f2c(MPI_Fint errhandler);
MPI_Fint PMPI_Win_c2f(MPI_Win win);
MPI_Win PMPI_Win_f2c(MPI_Fint win);
MPI_Fint PMPI_Message_c2f(MPI_Message message);
MPI_Message PMPI_Message_f2c(MPI_Fint message);
int PMPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status);
int PMPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status);
int PMPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
		   MPI_Win *win);
int PMPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
		     void *baseptr, MPI_Win *win);
int PMPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
			    void *baseptr, MPI_Win *win);
int PMPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
			 void *baseptr);
int PMPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win);
int PMPI_Win_attach(MPI_Win win, void *base, MPI_Aint size);
int PMPI_Win_detach(MPI_Win win, const void *base);
int PMPI_Win_free(MPI_Win *win);
int PMPI_Win_get_group(MPI_Win win, MPI_Group *group);
int PMPI_Win_set_name(MPI_Win win, const char *win_name);
int PMPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen);
int PMPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag);
int PMPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler);
int PMPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler);
int PMPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn,
			   MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval,
			   void *extra_state);
int PMPI_Win_free_keyval(int *win_keyval);
int PMPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val);
int PMPI_Win_delete_attr(MPI_Win win, int win_keyval);
int PMPI_WIN_NULL_COPY_FN(MPI_Win oldwin, int win_keyval, void *extra_state,
			  void *attribute_val_in, void *attribute_val_out, int *flag);
int PMPI_WIN_DUP_FN(MPI_Win oldwin, int win_keyval, void *extra_state, void *attribute_val_in,
		    void *attribute_val_out, int *flag);
int PMPI_WIN_NULL_DELETE_FN(MPI_Win win, int win_keyval, void *attribute_val,
			    void *extra_state);
int PMPI_Win_create_errhandler(MPI_Win_errhandler_function *win_errhandler_fn,
			       MPI_Errhandler *errhandler);
int PMPI_Win_call_errhandler(MPI_Win win, int errorcode);
int PMPI_Win_set_info(MPI_Win win, MPI_Info info);
int PMPI_Win_get_info(MPI_Win win, MPI_Info *info_used);
int PMPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
	    int target_rank, MPI_Aint target_disp, int target_count,
	    MPI_Datatype target_datatype, MPI_Win win);
int PMPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
	    int target_rank, MPI_Aint target_disp, int target_count,
	    MPI_Datatype target_datatype, MPI_Win win);
int PMPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
		   int target_rank, MPI_Aint target_disp, int target_count,
		   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win);
int PMPI_Get_accumulate(const void *origin_addr, int origin_count,
		       MPI_Datatype origin_datatype, void *result_addr, int result_count,
		       MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
		       int target_count, MPI_Datatype target_datatype, MPI_Op op,
		       MPI_Win win);
int PMPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
		     int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win);
int PMPI_Compare_and_swap(const void *origin_addr, const void *compare_addr,
			 void *result_addr, MPI_Datatype datatype, int target_rank,
			 MPI_Aint target_disp, MPI_Win win);
int PMPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
	     int target_rank, MPI_Aint target_disp, int target_count,
	     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request);
int PMPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
	     int target_rank, MPI_Aint target_disp, int target_count,
	     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request);
int PMPI_Raccumulate(const void *origin_addr, int origin_count,
		    MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
		    int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
		    MPI_Request *request);
int PMPI_Rget_accumulate(const void *origin_addr, int origin_count,
			MPI_Datatype origin_datatype, void *result_addr, int result_count,
			MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
			int target_count, MPI_Datatype target_datatype, MPI_Op op,
			MPI_Win win, MPI_Request *request);
int PMPI_Win_fence(int assert, MPI_Win win);
int PMPI_Win_post(MPI_Group group, int assert, MPI_Win win);
int PMPI_Win_start(MPI_Group group, int assert, MPI_Win win);
int PMPI_Win_complete(MPI_Win win);
int PMPI_Win_wait(MPI_Win win);
int PMPI_Win_test(MPI_Win win, int *flag);
int PMPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win);
int PMPI_Win_unlock(int rank, MPI_Win win);
int PMPI_Win_lock_all(int assert, MPI_Win win);
int PMPI_Win_unlock_all(MPI_Win win);
int PMPI_Win_flush(int rank, MPI_Win win);
int PMPI_Win_flush_all(MPI_Win win);
int PMPI_Win_flush_local(int rank, MPI_Win win);
int PMPI_Win_flush_local_all(MPI_Win win);
int PMPI_Win_sync(MPI_Win win);

#ifdef __cplusplus
}
#endif

#endif /* VIADUCT_MPI_H */
