! SPDX-License-Identifier: MIT
! Fixed-form Fortran 77 with include 'mpif.h': point to point around a
! ring (status fields, MPI_STATUS_IGNORE, MPI_ANY_SOURCE, Get_count),
! reductions of INTEGER and DOUBLE PRECISION checked against the closed
! forms, Bcast, Wtime, and strings coming back from the library.
      PROGRAM F77BASIC
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, NPROC, NEXT, PREV, ISUM, N, I, NBAD
      INTEGER BUF(10), STAT(MPI_STATUS_SIZE), LEN
      DOUBLE PRECISION DSUM, T0
      CHARACTER*(MPI_MAX_PROCESSOR_NAME) HOST
      CHARACTER*(MPI_MAX_ERROR_STRING) ESTR

      NBAD = 0
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NPROC, IERR)
      T0 = MPI_WTIME()
      NEXT = MOD(RANK + 1, NPROC)
      PREV = MOD(RANK + NPROC - 1, NPROC)

      DO I = 1, 10
         BUF(I) = RANK * 100 + I
      END DO
      CALL MPI_SENDRECV_REPLACE(BUF, 10, MPI_INTEGER, NEXT, 7,
     &     MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, STAT, IERR)
      IF (STAT(MPI_SOURCE) .NE. PREV .OR. STAT(MPI_TAG) .NE. 7) THEN
         PRINT *, 'bad status', STAT(MPI_SOURCE), STAT(MPI_TAG)
         NBAD = NBAD + 1
      END IF
      CALL MPI_GET_COUNT(STAT, MPI_INTEGER, N, IERR)
      IF (N .NE. 10) NBAD = NBAD + 1
      DO I = 1, 10
         IF (BUF(I) .NE. PREV * 100 + I) NBAD = NBAD + 1
      END DO

      CALL MPI_SENDRECV(RANK, 1, MPI_INTEGER, NEXT, 8, N, 1,
     &     MPI_INTEGER, PREV, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE,
     &     IERR)
      IF (N .NE. PREV) NBAD = NBAD + 1

      CALL MPI_ALLREDUCE(RANK, ISUM, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, IERR)
      IF (ISUM .NE. NPROC * (NPROC - 1) / 2) NBAD = NBAD + 1
      CALL MPI_ALLREDUCE(DBLE(RANK) + 0.5D0, DSUM, 1,
     &     MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, IERR)
      IF (ABS(DSUM - (NPROC*(NPROC-1)/2 + 0.5D0*NPROC)) .GT. 1D-9)
     &     NBAD = NBAD + 1

      N = 0
      IF (RANK .EQ. 0) N = 4242
      CALL MPI_BCAST(N, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, IERR)
      IF (N .NE. 4242) NBAD = NBAD + 1

      CALL MPI_GET_PROCESSOR_NAME(HOST, LEN, IERR)
      IF (LEN .LE. 0 .OR. LEN .GT. MPI_MAX_PROCESSOR_NAME) NBAD=NBAD+1
      IF (HOST(LEN+1:) .NE. ' ') NBAD = NBAD + 1
      CALL MPI_ERROR_STRING(MPI_ERR_RANK, ESTR, LEN, IERR)
      IF (LEN .LE. 0 .OR. IERR .NE. MPI_SUCCESS) NBAD = NBAD + 1
      IF (MPI_WTIME() .LT. T0) NBAD = NBAD + 1

      CALL MPI_ALLREDUCE(MPI_IN_PLACE, NBAD, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0 .AND. NBAD .EQ. 0) PRINT *, 'f77_basic: OK'
      CALL MPI_FINALIZE(IERR)
      IF (NBAD .NE. 0) THEN
         PRINT *, 'f77_basic: rank', RANK, 'checks failed:', NBAD
         STOP 1
      END IF
      END
