package fifobackupengine

import "golang.org/x/sys/unix"

// growPipe asks the kernel to let the pipe behind fd hold size bytes. It is
// best effort: a pipe the kernel will not grow (the user's pipe pages used
// up, a lower pipe-max-size) keeps its size, which costs speed only.
func growPipe(fd uintptr, size int) {
	_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size)
}
