//go:build wasip1

package guest

import "unsafe"

// One import of module "host" per function of the host catalog.

//go:wasmimport host askUser
func hostAskUser(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport host checkInterrupt
func hostCheckInterrupt(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport host delegate
func hostDelegate(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport host drainSteer
func hostDrainSteer(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport host emit
func hostEmit(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport host log
func hostLog(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport host now
func hostNow(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport host publish
func hostPublish(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport host random
func hostRandom(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport host reportUsage
func hostReportUsage(ptr unsafe.Pointer, n uint32) uint64

func hostFunc(name string) rawFunc {
	switch name {
	case FuncAskUser:
		return hostAskUser
	case FuncCheckInterrupt:
		return hostCheckInterrupt
	case FuncDelegate:
		return hostDelegate
	case FuncDrainSteer:
		return hostDrainSteer
	case FuncEmit:
		return hostEmit
	case FuncLog:
		return hostLog
	case FuncNow:
		return hostNow
	case FuncPublish:
		return hostPublish
	case FuncRandom:
		return hostRandom
	case FuncReportUsage:
		return hostReportUsage
	}
	return nil
}
