; One function of pypi:coverage (Apache-2.0), as llmopt datagen extracted it (data/llmopt-v3).
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
%struct.DataStack = type { i32, i32, ptr }
define dso_local i32 @DataStack_init(ptr noundef %0, ptr noundef %1) minsize nounwind optsize uwtable {
%3 = alloca ptr, align 8
%4 = alloca ptr, align 8
store ptr %0, ptr %3, align 8, !tbaa !5
store ptr %1, ptr %4, align 8, !tbaa !5
%5 = load ptr, ptr %4, align 8, !tbaa !5
%6 = getelementptr inbounds %struct.DataStack, ptr %5, i32 0, i32 0
store i32 -1, ptr %6, align 8, !tbaa !9
%7 = load ptr, ptr %4, align 8, !tbaa !5
%8 = getelementptr inbounds %struct.DataStack, ptr %7, i32 0, i32 2
store ptr null, ptr %8, align 8, !tbaa !12
%9 = load ptr, ptr %4, align 8, !tbaa !5
%10 = getelementptr inbounds %struct.DataStack, ptr %9, i32 0, i32 1
store i32 0, ptr %10, align 4, !tbaa !13
ret i32 0
}
!5 = !{!6, !6, i64 0}
!6 = !{!"any pointer", !7, i64 0}
!7 = !{!"omnipotent char", !8, i64 0}
!8 = !{!"Simple C/C++ TBAA"}
!9 = !{!10, !11, i64 0}
!10 = !{!"DataStack", !11, i64 0, !11, i64 4, !6, i64 8}
!11 = !{!"int", !7, i64 0}
!12 = !{!10, !6, i64 8}
!13 = !{!10, !11, i64 4}
