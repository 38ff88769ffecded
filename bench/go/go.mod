module schedlab/bench/go

go 1.19
