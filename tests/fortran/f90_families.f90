! SPDX-License-Identifier: MIT
! One call or more from each MPI family through `use mpi`, results
! checked: derived datatypes, attributes (MPI_TAG_UB, MPI_UNIVERSE_SIZE),
! names and info strings, groups with rank ranges, a periodic Cartesian
! grid (LOGICAL arrays), persistent requests, a nonblocking collective,
! one-sided Put under fence with window attributes, and user error
! handlers written in Fortran (for a communicator and a window).
module f90_fam_handler
  implicit none
  integer :: handled = 0, last_code = 0
contains
  subroutine on_error(comm, code)
    integer :: comm, code
    handled = handled + 1
    last_code = code
    if (comm == -12345) handled = -1000   ! keeps comm used
  end subroutine
end module f90_fam_handler

program f90_families
  use mpi
  use f90_fam_handler
  implicit none
  integer :: ierr, rank, nproc, nbad, i, vec, n, cart, left, right, grp, sub, info, eh
  integer :: ranges(3, 1), dims(1), req(2), win, cls, namelen
  integer(kind=MPI_ADDRESS_KIND) :: tagub, wsize, disp, attrval, extent, lb
  logical :: flag, periods(1)
  integer :: mat(4, 3), col(4)
  ! Written by MPI outside the calls that name them (persistent requests,
  ! the window): without ASYNCHRONOUS the optimiser may keep stale copies.
  integer, asynchronous :: sbuf(2), rbuf(2), wbuf(8)
  character(len=MPI_MAX_OBJECT_NAME) :: name
  character(len=MPI_MAX_INFO_VAL) :: val

  nbad = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)

  ! a strided row of a column-major matrix, sent to ourselves
  mat = reshape([(i, i = 1, 12)], [4, 3])
  call MPI_Type_vector(3, 1, 4, MPI_INTEGER, vec, ierr)
  call MPI_Type_commit(vec, ierr)
  call MPI_Type_get_extent(vec, lb, extent, ierr)
  if (extent /= 9 * 4) nbad = nbad + 1
  call MPI_Sendrecv(mat(2, 1), 1, vec, 0, 1, col, 3, MPI_INTEGER, 0, 1, MPI_COMM_SELF, &
                    MPI_STATUS_IGNORE, ierr)
  if (any(col(1:3) /= [2, 6, 10])) nbad = nbad + 1
  call MPI_Type_get_name(MPI_INTEGER, name, namelen, ierr)
  if (name(1:namelen) /= 'MPI_INTEGER') nbad = nbad + 1
  call MPI_Type_free(vec, ierr)

  ! attributes: a predefined one and one of our own
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, tagub, flag, ierr)
  if (.not. flag .or. tagub < 32767) nbad = nbad + 1
  call MPI_Comm_set_name(MPI_COMM_WORLD, 'the world', ierr)
  call MPI_Comm_get_name(MPI_COMM_WORLD, name, namelen, ierr)
  if (name(1:namelen) /= 'the world') nbad = nbad + 1

  ! info: strings in, strings and LOGICAL out
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'colour', 'blue  ', ierr)
  call MPI_Info_get(info, 'colour', MPI_MAX_INFO_VAL, val, flag, ierr)
  if (.not. flag .or. trim(val) /= 'blue') nbad = nbad + 1
  call MPI_Info_get(info, 'shape', MPI_MAX_INFO_VAL, val, flag, ierr)
  if (flag) nbad = nbad + 1
  call MPI_Info_free(info, ierr)

  ! groups: every other rank by a range triplet
  call MPI_Comm_group(MPI_COMM_WORLD, grp, ierr)
  ranges(:, 1) = [0, nproc - 1, 2]
  call MPI_Group_range_incl(grp, 1, ranges, sub, ierr)
  call MPI_Group_size(sub, n, ierr)
  if (n /= (nproc + 1) / 2) nbad = nbad + 1
  call MPI_Group_free(sub, ierr)
  call MPI_Group_free(grp, ierr)

  ! a periodic ring as a Cartesian grid
  dims(1) = 0
  call MPI_Dims_create(nproc, 1, dims, ierr)
  periods(1) = .true.
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., cart, ierr)
  call MPI_Cart_shift(cart, 0, 1, left, right, ierr)
  if (left /= mod(rank + nproc - 1, nproc) .or. right /= mod(rank + 1, nproc)) nbad = nbad + 1

  ! persistent requests around the ring, started twice
  call MPI_Recv_init(rbuf, 2, MPI_INTEGER, left, 5, cart, req(1), ierr)
  call MPI_Send_init(sbuf, 2, MPI_INTEGER, right, 5, cart, req(2), ierr)
  do i = 1, 2
    sbuf = [rank, i]
    call MPI_Startall(2, req, ierr)
    call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
    if (any(rbuf /= [left, i])) nbad = nbad + 1
  end do
  call MPI_Request_free(req(1), ierr)
  call MPI_Request_free(req(2), ierr)

  ! a nonblocking collective
  call MPI_Iallreduce(rank, n, 1, MPI_INTEGER, MPI_SUM, cart, req(1), ierr)
  call MPI_Wait(req(1), MPI_STATUS_IGNORE, ierr)
  if (n /= nproc * (nproc - 1) / 2) nbad = nbad + 1
  call MPI_Comm_free(cart, ierr)

  ! one-sided: each rank puts its rank into slot `rank` of its right neighbour
  wbuf = -1
  call MPI_Win_create(wbuf, int(8 * 4, MPI_ADDRESS_KIND), 4, MPI_INFO_NULL, MPI_COMM_WORLD, &
                      win, ierr)
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, wsize, flag, ierr)
  if (.not. flag .or. wsize /= 32) nbad = nbad + 1
  call MPI_Win_fence(0, win, ierr)
  disp = mod(rank, 8)
  call MPI_Put(rank, 1, MPI_INTEGER, mod(rank + 1, nproc), disp, 1, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  if (wbuf(mod(left, 8) + 1) /= left) nbad = nbad + 1
  ! the same Fortran handler, made for the window
  call MPI_Win_create_errhandler(on_error, eh, ierr)
  call MPI_Win_set_errhandler(win, eh, ierr)
  call MPI_Win_call_errhandler(win, MPI_ERR_OTHER, ierr)
  if (ierr /= MPI_SUCCESS .or. handled /= 1 .or. last_code /= MPI_ERR_OTHER) nbad = nbad + 1
  call MPI_Errhandler_free(eh, ierr)
  handled = 0
  call MPI_Win_free(win, ierr)

  ! a user error handler written in Fortran; an attribute read as a value
  call MPI_Comm_dup(MPI_COMM_WORLD, sub, ierr)
  call MPI_Comm_create_errhandler(on_error, eh, ierr)
  call MPI_Comm_set_errhandler(sub, eh, ierr)
  call MPI_Send(rank, 1, MPI_INTEGER, nproc + 3, 0, sub, ierr)
  call MPI_Error_class(last_code, cls, ierr)
  if (handled /= 1 .or. cls /= MPI_ERR_RANK) nbad = nbad + 1
  call MPI_Errhandler_free(eh, ierr)
  attrval = 0
  call MPI_Comm_get_attr(sub, MPI_UNIVERSE_SIZE, attrval, flag, ierr)
  if (flag .and. attrval /= nproc) nbad = nbad + 1
  call MPI_Comm_free(sub, ierr)

  call MPI_Allreduce(MPI_IN_PLACE, nbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. nbad == 0) print *, 'f90_families: OK'
  call MPI_Finalize(ierr)
  if (nbad /= 0) then
    print *, 'f90_families: rank', rank, 'checks failed:', nbad
    stop 1
  end if
end program f90_families
