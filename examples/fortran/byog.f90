! byog.f90: bring-your-own-gradients from Fortran. Each rank observes a decaying signal
! y(t) = a exp(-k t) + c at its own times, computes the gradient of its mean squared misfit
! by hand, and libhpctrain averages it over the ranks and steps AdamW on the caller's own
! array theta = (a, k, c), in place.
!
! Build: mpif90 byog.f90 $(pkg-config --static --cflags --libs hpctrain)
! Run:   mpirun -np 2 ./byog          (exit 0 when the fit recovers a, k and c)
program byog
    use, intrinsic :: iso_c_binding
    use hpctrain
    implicit none
    integer, parameter :: N = 40, STEPS = 3000      ! observations per rank, optimizer steps
    real(c_float), parameter :: truth(3) = [2.0, 0.7, 0.5]
    real(c_float), target :: theta(3), grad(3)     ! registered: the library uses them in place
    real(c_float) :: t(N), y(N), e(N), r(N), err
    type(hpct_ctx_t) :: ctx
    type(hpct_topology_t) :: topo
    type(hpct_params_t) :: params
    type(hpct_optimizer_t) :: opt
    type(hpct_optim_config_t) :: oc
    integer :: i, step, ierr

    call hpct_init(ctx)                             ! MPI_Init too, when the caller has not
    call hpct_topology(ctx, topo)
    ! This rank's observation times interleave with the other ranks': t = 0, 0.1, 0.2, ...
    t = [(0.1 * real(topo%rank + i * topo%size), i = 0, N - 1)]
    y = truth(1) * exp(-truth(2) * t) + truth(3)

    theta = [1.0, 1.0, 0.0]
    call hpct_params_create(ctx, params)
    call hpct_params_register(params, "decay/theta", theta, grad)
    call hpct_params_broadcast(params, 0)           ! identical replicas from the start
    oc%kind = HPCT_OPT_ADAMW
    oc%lr = 0.05
    oc%schedule = HPCT_SCHED_COSINE
    oc%total_steps = STEPS
    oc%min_lr = 1e-4
    call hpct_optimizer_create(params, oc, opt)

    do step = 1, STEPS
        e = exp(-theta(2) * t)
        r = theta(1) * e + theta(3) - y             ! residuals of this rank's observations
        grad(1) = 2 * sum(r * e) / N                ! d/da of mean(r**2)
        grad(2) = -2 * sum(r * theta(1) * t * e) / N ! d/dk
        grad(3) = 2 * sum(r) / N                    ! d/dc
        call hpct_params_average_grads(params)      ! the mean over ranks: the global gradient
        call hpct_optimizer_step(opt)
    end do

    call hpct_params_check_replicas(params, ierr)   ! with ierr: report instead of stopping
    if (ierr /= HPCT_SUCCESS) write (*, "('byog: ', a)") hpct_last_error(params)
    err = maxval(abs(theta - truth))
    if (topo%rank == 0) write (*, "('byog: ', i0, ' rank(s): a = ', f7.4, ', k = ', f7.4, ', c = ', f7.4, &
        &'; max error ', es8.2)") topo%size, theta, err
    call hpct_optimizer_destroy(opt)
    call hpct_params_destroy(params)
    call hpct_finalize(ctx)
    if (err > 1e-2 .or. ierr /= HPCT_SUCCESS) stop 1
end program byog
