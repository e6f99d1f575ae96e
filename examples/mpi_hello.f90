! SPDX-License-Identifier: MIT
! The smallest MPI program in Fortran (build: vdfort mpi_hello.f90):
! every rank says hello, rank 0 sums the ranks.
program mpi_hello
  use mpi
  implicit none
  integer :: ierr, rank, nproc, total, namelen
  character(len=MPI_MAX_PROCESSOR_NAME) :: name

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  call MPI_Get_processor_name(name, namelen, ierr)
  print '(a,i0,a,i0,a,a)', 'hello from rank ', rank, ' of ', nproc, ' on ', name(1:namelen)
  call MPI_Reduce(rank, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a,i0,a)', 'sum of ranks: ', total, ' (expected ', &
       nproc * (nproc - 1) / 2, ')'
  call MPI_Finalize(ierr)
end program mpi_hello
