! SPDX-License-Identifier: MIT
! Free-form Fortran with `use mpi`: nonblocking exchange with
! MPI_STATUSES_IGNORE and a status array, MPI_IN_PLACE reductions,
! MAXLOC on MPI_2DOUBLE_PRECISION, a user-defined (non-commutative) op
! written in Fortran, Comm_split/dup, LOGICAL flags, and errors returned
! in ierror under MPI_ERRORS_RETURN.
module f90_ops
  implicit none
contains
  ! (a, b) o (c, d) = (a*c, b*c + d): affine maps composed, which is
  ! associative but not commutative; a scan of them is order-sensitive.
  subroutine compose(invec, inoutvec, len, datatype)
    integer :: len, datatype, i
    double precision :: invec(2, len), inoutvec(2, len)
    do i = 1, len
      inoutvec(2, i) = invec(2, i) * inoutvec(1, i) + inoutvec(2, i)
      inoutvec(1, i) = invec(1, i) * inoutvec(1, i)
    end do
  end subroutine
end module f90_ops

program f90_module
  use mpi
  use f90_ops
  implicit none
  integer :: ierr, rank, nproc, next, prev, nbad, i, color, sub, subrank, subsize, dup
  integer :: reqs(2), stats(MPI_STATUS_SIZE, 2), op, res, cnt
  double precision :: sendv(4), recvv(4), pair(2), best(2), aff(2), tot(2), want(2)
  logical :: flag

  nbad = 0
  call MPI_Init(ierr)
  call MPI_Initialized(flag, ierr)
  if (.not. flag) nbad = nbad + 1
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  next = mod(rank + 1, nproc)
  prev = mod(rank + nproc - 1, nproc)

  sendv = [(rank * 10.0d0 + i, i = 1, 4)]
  call MPI_Irecv(recvv, 4, MPI_DOUBLE_PRECISION, prev, 3, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(sendv, 4, MPI_DOUBLE_PRECISION, next, 3, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, stats, ierr)
  if (stats(MPI_SOURCE, 1) /= prev) nbad = nbad + 1
  if (any(abs(recvv - [(prev * 10.0d0 + i, i = 1, 4)]) > 1d-9)) nbad = nbad + 1
  if (reqs(1) /= MPI_REQUEST_NULL) nbad = nbad + 1
  call MPI_Irecv(recvv, 4, MPI_DOUBLE_PRECISION, prev, 4, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(sendv, 4, MPI_DOUBLE_PRECISION, next, 4, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  flag = .false.
  call MPI_Test(reqs(1), flag, MPI_STATUS_IGNORE, ierr)
  if (.not. flag) nbad = nbad + 1

  ! MAXLOC: the largest value is rank-dependent, ties go to the lower index
  pair = [dble(mod(rank, 3)), dble(rank)]
  call MPI_Allreduce(pair, best, 1, MPI_2DOUBLE_PRECISION, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  want = [dble(min(2, nproc - 1)), dble(min(2, nproc - 1))]
  if (any(abs(best - want) > 1d-9)) nbad = nbad + 1

  ! a Fortran user op, not commutative: the result must follow rank order
  call MPI_Op_create(compose, .false., op, ierr)
  aff = [2.0d0, dble(rank + 1)]
  call MPI_Allreduce(aff, tot, 1, MPI_2DOUBLE_PRECISION, op, MPI_COMM_WORLD, ierr)
  want = [1.0d0, 0.0d0]
  do i = 0, nproc - 1       ! serial: fold ranks 0..n-1 in order
    want = [2.0d0 * want(1), 2.0d0 * want(2) + dble(i + 1)]
  end do
  if (any(abs(tot - want) > 1d-9)) then
    print *, 'user op:', tot, 'want', want
    nbad = nbad + 1
  end if
  call MPI_Op_free(op, ierr)

  ! in-place reduction of an array
  recvv = dble(rank)
  call MPI_Allreduce(MPI_IN_PLACE, recvv, 4, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (any(abs(recvv - dble(nproc - 1)) > 1d-9)) nbad = nbad + 1

  ! communicators
  color = mod(rank, 2)
  call MPI_Comm_split(MPI_COMM_WORLD, color, -rank, sub, ierr)
  call MPI_Comm_size(sub, subsize, ierr)
  call MPI_Comm_rank(sub, subrank, ierr)
  if (subsize /= (nproc + 1 - color) / 2) nbad = nbad + 1
  call MPI_Comm_dup(sub, dup, ierr)
  call MPI_Comm_compare(sub, dup, res, ierr)
  if (res /= MPI_CONGRUENT) nbad = nbad + 1
  call MPI_Allreduce(rank, cnt, 1, MPI_INTEGER, MPI_SUM, dup, ierr)
  i = 0
  do res = color, nproc - 1, 2
    i = i + res
  end do
  if (cnt /= i) nbad = nbad + 1
  call MPI_Comm_free(dup, ierr)
  call MPI_Comm_free(sub, ierr)
  if (sub /= MPI_COMM_NULL) nbad = nbad + 1

  ! errors come back in ierror
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_Send(sendv, 1, MPI_DOUBLE_PRECISION, nproc + 5, 0, MPI_COMM_WORLD, ierr)
  if (ierr == MPI_SUCCESS) nbad = nbad + 1
  call MPI_Error_class(ierr, res, i)
  if (res /= MPI_ERR_RANK) nbad = nbad + 1

  call MPI_Allreduce(MPI_IN_PLACE, nbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. nbad == 0) print *, 'f90_module: OK'
  call MPI_Finalize(ierr)
  call MPI_Finalized(flag, ierr)
  if (.not. flag) nbad = nbad + 1
  if (nbad /= 0) then
    print *, 'f90_module: rank', rank, 'checks failed:', nbad
    stop 1
  end if
end program f90_module
