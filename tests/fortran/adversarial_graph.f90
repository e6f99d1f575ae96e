! SPDX-License-Identifier: MIT
! Distributed graphs from Fortran with MPI_UNWEIGHTED and
! MPI_WEIGHTS_EMPTY (they were missing: the arrays passed as weights were
! taken for weights): a ring, a neighbourhood exchange on it, and a graph
! with no edges at all.
program adversarial_graph
  use mpi
  implicit none
  integer :: ierr, rank, nproc, nbad, ring, empty, indeg, outdeg
  integer :: srcs(1), dsts(1), sendv(1), recvv(1), gotsrc(1), gotdst(1)
  logical :: weighted

  nbad = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  srcs(1) = mod(rank + nproc - 1, nproc)
  dsts(1) = mod(rank + 1, nproc)
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, srcs, MPI_UNWEIGHTED, 1, dsts, &
                                      MPI_UNWEIGHTED, MPI_INFO_NULL, .false., ring, ierr)
  if (ierr /= MPI_SUCCESS) nbad = nbad + 1
  call MPI_Dist_graph_neighbors_count(ring, indeg, outdeg, weighted, ierr)
  if (indeg /= 1 .or. outdeg /= 1 .or. weighted) then
    print *, 'ring neighbours:', indeg, outdeg, weighted
    nbad = nbad + 1
  end if
  call MPI_Dist_graph_neighbors(ring, 1, gotsrc, MPI_UNWEIGHTED, 1, gotdst, MPI_UNWEIGHTED, ierr)
  if (ierr /= MPI_SUCCESS .or. gotsrc(1) /= srcs(1) .or. gotdst(1) /= dsts(1)) then
    print *, 'ring neighbours:', ierr, gotsrc, gotdst
    nbad = nbad + 1
  end if
  sendv(1) = 10 * rank + 1
  recvv(1) = -1
  call MPI_Neighbor_alltoall(sendv, 1, MPI_INTEGER, recvv, 1, MPI_INTEGER, ring, ierr)
  if (recvv(1) /= 10 * srcs(1) + 1) then
    print *, 'ring exchange:', recvv(1)
    nbad = nbad + 1
  end if
  call MPI_Comm_free(ring, ierr)

  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, srcs, MPI_WEIGHTS_EMPTY, 0, dsts, &
                                      MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, .false., empty, ierr)
  if (ierr /= MPI_SUCCESS) nbad = nbad + 1
  call MPI_Dist_graph_neighbors_count(empty, indeg, outdeg, weighted, ierr)
  if (indeg /= 0 .or. outdeg /= 0 .or. .not. weighted) then
    print *, 'empty graph:', indeg, outdeg, weighted
    nbad = nbad + 1
  end if
  call MPI_Comm_free(empty, ierr)

  call MPI_Allreduce(MPI_IN_PLACE, nbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. nbad == 0) print *, 'adversarial_graph: OK'
  call MPI_Finalize(ierr)
  if (nbad /= 0) then
    print *, 'adversarial_graph: rank', rank, 'checks failed:', nbad
    stop 1
  end if
end program adversarial_graph
