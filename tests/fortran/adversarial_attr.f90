! SPDX-License-Identifier: MIT
! Attributes from Fortran: MPI_Comm_get_attr and MPI_Win_get_attr give the
! predefined attributes' values in an INTEGER(KIND=MPI_ADDRESS_KIND) (they
! gave the address C keeps them at), MPI_WIN_BASE gives the base address.
program adversarial_attr
  use mpi
  implicit none
  integer :: ierr, rank, nproc, nbad, win, buf(4)
  integer(kind=MPI_ADDRESS_KIND) :: val, sz, base
  logical :: flag

  nbad = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)

  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  if (.not. flag .or. val < 32767 .or. val > 2147483647_MPI_ADDRESS_KIND) then
    print *, 'MPI_TAG_UB:', flag, val
    nbad = nbad + 1
  end if
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, val, flag, ierr)
  if (flag .and. val /= 0 .and. val /= 1) then
    print *, 'MPI_WTIME_IS_GLOBAL:', val
    nbad = nbad + 1
  end if
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, val, flag, ierr)
  if (flag .and. val < nproc) then
    print *, 'MPI_UNIVERSE_SIZE:', val
    nbad = nbad + 1
  end if

  sz = 16
  call MPI_Win_create(buf, sz, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, val, flag, ierr)
  if (.not. flag .or. val /= 16) then
    print *, 'MPI_WIN_SIZE:', flag, val
    nbad = nbad + 1
  end if
  call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, val, flag, ierr)
  if (.not. flag .or. val /= 4) then
    print *, 'MPI_WIN_DISP_UNIT:', flag, val
    nbad = nbad + 1
  end if
  call MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, val, flag, ierr)
  if (.not. flag .or. val /= MPI_WIN_FLAVOR_CREATE) then
    print *, 'MPI_WIN_CREATE_FLAVOR:', flag, val
    nbad = nbad + 1
  end if
  call MPI_Win_get_attr(win, MPI_WIN_MODEL, val, flag, ierr)
  if (.not. flag .or. val /= MPI_WIN_UNIFIED) then
    print *, 'MPI_WIN_MODEL:', flag, val
    nbad = nbad + 1
  end if
  call MPI_Get_address(buf, base, ierr)
  call MPI_Win_get_attr(win, MPI_WIN_BASE, val, flag, ierr)
  if (.not. flag .or. val /= base) then
    print *, 'MPI_WIN_BASE:', flag, val, base
    nbad = nbad + 1
  end if
  call MPI_Win_free(win, ierr)

  call MPI_Allreduce(MPI_IN_PLACE, nbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. nbad == 0) print *, 'adversarial_attr: OK'
  call MPI_Finalize(ierr)
  if (nbad /= 0) then
    print *, 'adversarial_attr: rank', rank, 'checks failed:', nbad
    stop 1
  end if
end program adversarial_attr
