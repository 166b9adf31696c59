module ursa/bench/peers/go

go 1.19
