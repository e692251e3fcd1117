/* launch_env.h — what the MPI launcher tells a process about its place in
 * the job, read from the environment. The single trainer never initialises
 * MPI (main.c), so it cannot ask a communicator; the GPU device it takes
 * still depends on its node-local rank. One reader, so that the trainer
 * and the CUDA backend agree on which variables count. (The distributed
 * trainers have a communicator and ask MPI itself, with
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) in dist_run.c, which agrees
 * with these variables wherever a launcher sets them.)
 *
 * Pure functions of a lookup function (getenv in production, a table in
 * tests); the values are read once at start-up into engine_options
 * (train/options.h). */
#ifndef PUNCH_LAUNCH_ENV_H
#define PUNCH_LAUNCH_ENV_H

/* The environment lookup: launch_env_getenv, or a test's table. NULL when
 * unset. */
typedef const char *(*launch_env_lookup)(const char *name);

/* getenv(3) as a launch_env_lookup. */
const char *launch_env_getenv(const char *name);

/* The node-local rank: OMPI_COMM_WORLD_LOCAL_RANK (Open MPI), then
 * MPI_LOCALRANKID (MPICH), then SLURM_LOCALID; the first that holds a
 * non-negative integer wins; 0 when none does. */
int launch_env_local_rank(launch_env_lookup lookup);

/* The number of ranks mpirun started: OMPI_COMM_WORLD_SIZE (Open MPI),
 * then PMI_SIZE (MPICH); 1 when neither holds a positive integer (not
 * started by a launcher). */
int launch_env_world_size(launch_env_lookup lookup);

#endif
