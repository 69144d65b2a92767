; One function of pypi:httptools (MIT), as llmopt datagen extracted it (data/llmopt-v3).
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
%struct.http_parser = type { i32, i32, i64, i16, i16, i32, ptr }
declare void @llvm.lifetime.start.p0(i64 immarg, ptr nocapture) nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.end.p0(i64 immarg, ptr nocapture) nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
define dso_local void @http_parser_init(ptr noundef %0, i32 noundef %1) minsize nounwind optsize uwtable {
%3 = alloca ptr, align 8
%4 = alloca i32, align 4
%5 = alloca ptr, align 8
store ptr %0, ptr %3, align 8, !tbaa !5
store i32 %1, ptr %4, align 4, !tbaa !9
call void @llvm.lifetime.start.p0(i64 8, ptr %5) nounwind
%6 = load ptr, ptr %3, align 8, !tbaa !5
%7 = getelementptr inbounds %struct.http_parser, ptr %6, i32 0, i32 6
%8 = load ptr, ptr %7, align 8, !tbaa !11
store ptr %8, ptr %5, align 8, !tbaa !5
%9 = load ptr, ptr %3, align 8, !tbaa !5
call void @llvm.memset.p0.i64(ptr align 8 %9, i8 0, i64 32, i1 false)
%10 = load ptr, ptr %5, align 8, !tbaa !5
%11 = load ptr, ptr %3, align 8, !tbaa !5
%12 = getelementptr inbounds %struct.http_parser, ptr %11, i32 0, i32 6
store ptr %10, ptr %12, align 8, !tbaa !11
%13 = load i32, ptr %4, align 4, !tbaa !9
%14 = load ptr, ptr %3, align 8, !tbaa !5
%15 = load i32, ptr %14, align 8
%16 = and i32 %13, 3
%17 = and i32 %15, -4
%18 = or i32 %17, %16
store i32 %18, ptr %14, align 8
%19 = load i32, ptr %4, align 4, !tbaa !9
%20 = icmp eq i32 %19, 0
br i1 %20, label %21, label %22
21:
br label %27
22:
%23 = load i32, ptr %4, align 4, !tbaa !9
%24 = icmp eq i32 %23, 1
%25 = zext i1 %24 to i64
%26 = select i1 %24, i32 4, i32 2
br label %27
27:
%28 = phi i32 [ 18, %21 ], [ %26, %22 ]
%29 = load ptr, ptr %3, align 8, !tbaa !5
%30 = load i32, ptr %29, align 8
%31 = and i32 %28, 127
%32 = shl i32 %31, 10
%33 = and i32 %30, -130049
%34 = or i32 %33, %32
store i32 %34, ptr %29, align 8
%35 = load ptr, ptr %3, align 8, !tbaa !5
%36 = getelementptr inbounds %struct.http_parser, ptr %35, i32 0, i32 5
%37 = load i32, ptr %36, align 4
%38 = and i32 %37, -2130706433
%39 = or i32 %38, 0
store i32 %39, ptr %36, align 4
call void @llvm.lifetime.end.p0(i64 8, ptr %5) nounwind
ret void
}
declare void @llvm.memset.p0.i64(ptr nocapture writeonly, i8, i64, i1 immarg) nocallback nofree nounwind willreturn memory(argmem: write)
!5 = !{!6, !6, i64 0}
!6 = !{!"any pointer", !7, i64 0}
!7 = !{!"omnipotent char", !8, i64 0}
!8 = !{!"Simple C/C++ TBAA"}
!9 = !{!10, !10, i64 0}
!10 = !{!"int", !7, i64 0}
!11 = !{!12, !6, i64 24}
!12 = !{!"http_parser", !10, i64 0, !10, i64 0, !10, i64 1, !10, i64 2, !10, i64 3, !10, i64 3, !10, i64 3, !10, i64 4, !13, i64 8, !14, i64 16, !14, i64 18, !10, i64 20, !10, i64 22, !10, i64 23, !10, i64 23, !6, i64 24}
!13 = !{!"long", !7, i64 0}
!14 = !{!"short", !7, i64 0}
